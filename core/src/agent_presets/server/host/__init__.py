"""The headless host: the embedded default app that ``presets serve`` runs.

It holds the shell state a real host reports (surface, activity, canvas
visibility, theme, current world), a sandboxed file root (``roots``), and
slots that plugins fill with reference runtimes through
``presets_headless_runtime``, reading back the ``presets serve`` options they
added (``options``). Shell changes feed ``PresetManager.set_context``; every
change is persisted in the state directory (runtimes in its SQLite database,
``server.store.statedb``, or on Redis with ``presets serve --store
redis://...``, ``server.store.redisrows``, shared by every replica on it), so a
restart resumes where it stopped. One host at a time writes a state directory
(``StateLock``, ``server.store.lock``), and the file root may not overlap it
(``check_root``).

Its public names are ``agent_presets.host``'s.
"""
