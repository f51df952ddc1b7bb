"""The served host: the bare app ``presets serve`` runs (``served.ServedHost``).

It holds a context of whatever fields are set on it, saved in the state
directory, a sandboxed file root (``roots``), and slots that plugins fill
with runtimes through ``presets_headless_runtime``, reading back the
``presets serve`` options they added (``options``). An app plugin makes it
an app: it declares the context fields, supplies the defaults and may keep
the context itself (``agent_presets.hosting.ContextKeeper``). Context changes
feed ``PresetManager.set_context``; the runtimes' state is kept in the state
directory's SQLite database (``server.store.statedb``), or on Redis with
``presets serve --store redis://...`` (``server.store.redisrows``, shared by
every replica on it), so a restart resumes where it stopped. One host at a
time writes a state directory (``StateLock``, ``server.store.lock``), and the
file root may not overlap it (``check_root``).

Its public names are ``agent_presets.host``'s.
"""
