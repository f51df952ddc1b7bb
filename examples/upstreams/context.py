"""The activities the upstream packs switch on: a one-off plugin of this plugins folder.

``activity`` is the Space app's field (the general plugin's); this adds two values to it.
``files`` turns the filesystem pack's read tools on, ``history`` the git
pack's, and the host's ``space_app_set_activity`` switches between them
while the agent works (every client hears ``tools/list_changed``).
"""

from __future__ import annotations

from agent_presets import ContextField, hookimpl


@hookimpl
def presets_context_fields() -> list[ContextField]:
    return [
        ContextField(
            "activity",
            values=("files", "history"),
            description="files: reading the file root; history: reviewing its git history.",
        )
    ]
