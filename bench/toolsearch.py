"""presets_search on a large catalog: ranking quality, search time, and the list's tokens.

Run: uv run python bench/toolsearch.py [--rounds N] [--budget TOKENS] [--json]

The catalog is a generated plugin (``catalog``): 25 made-up apps (a calendar,
mail, invoicing, a git host, a cluster ...) with 4 kinds of object each and
10 actions on each kind (create, list, get, update, delete, search, export,
import, share, archive): 1,000 tools in 100 presets, one preset per app and
object, all active, each with a prompt fragment. Descriptions are written as
a tool author would, from templates (the action) and a gloss per object
(``APPS``). The query set, ``bench/toolsearch_queries.json``, holds 100 tasks
in a user's words, one per preset, each naming the tool that does it; no
query is a tool's name, title or description.

Figures:

- top-5: the share of queries whose tool is among the first 5 results of
  ``presets_search`` (target >= 90%), and top-1;
- search: the time of one search as the server runs it (the index query,
  the caller's allow-list filter, and each result's preset verdict and input
  schema), median and p95 over every query, ``--rounds`` times (target
  median <= 5 ms);
- tools/list: the tokens (o200k_base, each tool as the default client sends it to
  its model: ``agent_presets.lib.toolformats``) of the list with no budget and with
  ``--tool-budget`` (default 4,000), and how many tools each holds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

QUERIES = Path(__file__).with_name("toolsearch_queries.json")
TOP = 5
TARGET = 0.90
SEARCH_TARGET_MS = 5.0
DEFAULT_BUDGET = 4000

APPS: dict[str, tuple[str, dict[str, str]]] = {
    "calendar": (
        "the calendar (schedule)",
        {
            "event": "calendar event: a meeting or appointment with a time, place and guests",
            "attendee": "attendee of an event: a guest or participant, required or optional",
            "reminder": "reminder: an alert or notification sent before an event",
            "room": "bookable meeting room or venue",
        },
    ),
    "mail": (
        "the mailbox",
        {
            "message": "email message received or sent, with sender, subject and body",
            "folder": "mail folder (label) that messages are filed in, by name",
            "contact": "contact: a person's entry in the address book",
            "draft": "draft: an email written but not sent yet (unsent)",
        },
    ),
    "invoicing": (
        "billing and invoicing",
        {
            "invoice": "invoice (bill) sent to a customer, with lines and totals",
            "customer": "customer (client) that is billed",
            "payment": "payment received against an invoice",
            "tax_rate": "tax rate (VAT, sales tax) applied to invoice lines",
        },
    ),
    "tasks": (
        "the task manager",
        {
            "task": "task (to-do item) with a due date and assignee",
            "project": "project that groups tasks",
            "comment": "comment (note) left on a task",
            "tag": "tag (label) that marks tasks",
        },
    ),
    "code": (
        "the git hosting service",
        {
            "repository": "git repository (repo) of source code",
            "branch": "branch of a git repository",
            "pull_request": "pull request (merge request) proposing a branch's changes for review",
            "issue": "issue (bug report, ticket) in a repository's tracker",
        },
    ),
    "cluster": (
        "the Kubernetes cluster",
        {
            "pod": "pod: one or more containers running together in the cluster",
            "deployment": "deployment that runs and rolls out replicas of an app image",
            "service": "service: a stable network endpoint or load balancer in front of pods",
            "secret": "secret holding a credential, key or password",
        },
    ),
    "crm": (
        "the CRM (customer relationship management)",
        {
            "lead": "lead: a prospect who may become a customer",
            "deal": "deal (sales opportunity) with a value and a stage",
            "account": "account: a company or organisation you sell to",
            "activity": "activity logged on a lead or deal: a call, meeting or follow-up",
        },
    ),
    "helpdesk": (
        "the support helpdesk",
        {
            "ticket": "support ticket: a customer's request or complaint",
            "agent": "support agent (support staff member) who answers tickets",
            "macro": "macro: a saved reply template agents insert into tickets",
            "sla_policy": "SLA policy: the response and resolution time targets for tickets",
        },
    ),
    "storage": (
        "cloud file storage",
        {
            "file": "stored file (document)",
            "folder": "folder (directory) of stored files",
            "link": "shared link to a stored file, with an expiry",
            "quota": "storage quota: the space limit of a user or team, and its usage",
        },
    ),
    "inventory": (
        "inventory management",
        {
            "product": "product (stock item) with its SKU and spec",
            "warehouse": "warehouse (stock location, depot)",
            "stock_level": "stock level: the quantity of a product on hand at a warehouse",
            "supplier": "supplier (vendor) that products are bought from",
        },
    ),
    "hr": (
        "HR (human resources)",
        {
            "employee": "employee record: a member of staff",
            "leave_request": "leave request: vacation, time off or sick leave",
            "payslip": "payslip: an employee's salary statement for a month",
            "position": "position: a job opening to hire for",
        },
    ),
    "analytics": (
        "the analytics service",
        {
            "dashboard": "dashboard: a board of charts, an overview",
            "report": "analytics report",
            "metric": "metric (KPI) tracked over time",
            "alert_rule": "alert rule: a threshold on a metric to watch, that notifies someone",
        },
    ),
    "cms": (
        "the website's content management system (blog)",
        {
            "post": "blog post (article)",
            "page": "website page",
            "media": "media file: an image (picture) or video used in posts and pages",
            "author": "author (writer) of posts, with a profile and bio",
        },
    ),
    "shop": (
        "the online shop",
        {
            "order": "customer order (purchase) placed in the shop",
            "cart": "shopping cart that a visitor filled",
            "refund": "refund of an order, in full or in part",
            "coupon": "coupon (discount code)",
        },
    ),
    "chat": (
        "team chat",
        {
            "channel": "chat channel (chat room) where members talk",
            "message": "chat message posted in a channel (chat room)",
            "reaction": "reaction (emoji) on a chat message or post",
            "thread": "thread of replies to a chat message",
        },
    ),
    "travel": (
        "business travel booking",
        {
            "flight": "flight booking",
            "hotel_booking": (
                "hotel booking (room reservation, stay), its check-in and check-out nights"
            ),
            "itinerary": "itinerary: the plan of a trip, its flights and hotels",
            "expense_claim": "expense claim for a trip, with receipts, to be reimbursed",
        },
    ),
    "monitoring": (
        "service monitoring",
        {
            "incident": "incident: an outage or degradation, with its timeline",
            "uptime_check": "uptime check (health check) that pings a site or endpoint",
            "oncall_schedule": "on-call schedule (pager rota): who is paged when",
            "log_stream": "log stream: the logs collected from a service",
        },
    ),
    "database": (
        "the SQL database",
        {
            "table": "database table",
            "row": "row (record) of a table",
            "index": "index on table columns, for faster lookups and queries",
            "backup": "database backup (snapshot, dump) and how long it is kept",
        },
    ),
    "music": (
        "the music library",
        {
            "playlist": "playlist (mix) of tracks (songs)",
            "track": "track (song) in the library",
            "album": "album (record) and its tracks (songs)",
            "artist": "artist (band, musician)",
        },
    ),
    "fitness": (
        "the fitness tracker",
        {
            "workout": "workout (exercise session): a run, ride or gym session",
            "meal": "meal logged in the food diary, with its calories",
            "sleep_record": "sleep record for one night from the wearable",
            "goal": "fitness goal (target), such as a weekly distance",
        },
    ),
    "recipes": (
        "the recipe book",
        {
            "recipe": "recipe (dish) with steps and servings",
            "ingredient": "ingredient of a recipe, with its amount",
            "shopping_list": "shopping list of groceries to buy",
            "meal_plan": "meal plan: what to cook each day of a week",
        },
    ),
    "photos": (
        "the photo library",
        {
            "photo": "photo (image) with its date, place and camera details",
            "gallery": "gallery (album) of photos",
            "face": "face: a person recognised and tagged across photos",
            "filter": "filter: an editing look (effect) applied to photos",
        },
    ),
    "ledger": (
        "the accounting ledger",
        {
            "journal_entry": "journal entry (booking) posted to the ledger's books",
            "budget": "budget: planned amounts per account for a year",
            "bank_account": "bank account (checking or savings) tracked in the books",
            "fiscal_period": "fiscal period (month, quarter, year), open or closed",
        },
    ),
    "learning": (
        "the learning platform",
        {
            "course": "course (class) and its lessons",
            "quiz": "quiz (test, exam) in a course, with its questions",
            "student": "student (pupil, learner) enrolled in courses",
            "grade": "grade (mark, score) a student got on a quiz or course",
        },
    ),
    "home": (
        "the smart home hub",
        {
            "device": "connected device: a light, thermostat, plug or sensor",
            "routine": "routine (automation) that runs device actions on a schedule or trigger",
            "zone": "zone: a room or area of the home that devices are placed in",
            "energy_reading": "energy reading (electricity or gas use) from a meter",
        },
    ),
}

ACTIONS: dict[str, tuple[str, str]] = {
    "create": ("Create a {noun}", "Create a {gloss} in {app}. Returns its id."),
    "list": (
        "List {noun}s",
        "List the {noun}s in {app} (each a {gloss}), newest first, 50 a page.",
    ),
    "get": ("Get a {noun}", "Get one {gloss} in {app} by id, with all its fields."),
    "update": (
        "Update a {noun}",
        "Update a {gloss} in {app}: the fields given change, the others stay.",
    ),
    "delete": ("Delete a {noun}", "Delete a {gloss} from {app}. It cannot be undone."),
    "search": (
        "Search {noun}s",
        "Search the {noun}s in {app} (each a {gloss}) by text; best matches first.",
    ),
    "export": (
        "Export {noun}s",
        "Export {noun}s from {app} (each a {gloss}) to a CSV or JSON file.",
    ),
    "import": (
        "Import {noun}s",
        "Import {noun}s into {app} (each a {gloss}) from a CSV or JSON file.",
    ),
    "share": (
        "Share a {noun}",
        "Share a {gloss} in {app} with other people, with view or edit permission.",
    ),
    "archive": (
        "Archive a {noun}",
        "Archive a {gloss} in {app}: it is hidden but kept, and can be restored.",
    ),
}

_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "description": "The object's id."},
        "fields": {"type": "object", "description": "Fields to set."},
    },
}


def tool_id(app: str, action: str, noun: str) -> str:
    return f"{app}.{action}-{noun}"


def catalog(folder: Path) -> Any:
    """The generated plugin: 1,000 tools in 100 presets (``APPS`` x nouns x ``ACTIONS``)."""
    from agent_presets import ToolAdapter, hookimpl

    lines = ["presets:"]
    adapters: list[ToolAdapter] = []
    for app, (where, nouns) in APPS.items():
        for noun, gloss in nouns.items():
            words = noun.replace("_", " ")
            ids = []
            for action, (title, description) in ACTIONS.items():
                ids.append(tool_id(app, action, noun))
                adapters.append(
                    ToolAdapter(
                        ids[-1],
                        handler=_noop,
                        title=title.format(noun=words),
                        description=description.format(noun=words, gloss=gloss, app=where),
                        input_schema=_SCHEMA,
                    )
                )
            lines += [
                f"  - name: {app}-{noun.replace('_', '-')}-tools",
                f"    group: {app}",
                "    default_state: auto",
                "    risk: normal",
                "    contexts: [{surface: any}]",
                f"    tool_ids: [{', '.join(ids)}]",
                "    system_prompt: "
                + json.dumps(f"Tools for each {words} in {where}: a {gloss}."),
            ]
    path = folder / "catalog.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    class Catalog:
        @hookimpl
        def presets_preset_files(self) -> list[Path]:
            return [path]

        @hookimpl
        def presets_tool_adapters(self) -> list[ToolAdapter]:
            return adapters

    return Catalog()


def _noop(app: Any, arguments: dict[str, Any]) -> None:
    return None


def queries() -> list[dict[str, str]]:
    found: list[dict[str, str]] = json.loads(QUERIES.read_text(encoding="utf-8"))["queries"]
    return found


def build(folder: Path, budget: int | None) -> Any:
    """A server over the generated catalog (its search index built)."""
    from agent_presets import bootstrap
    from agent_presets.server import ServeConfig
    from agent_presets.server.mcp import build_server

    presets = bootstrap(None, plugins=[catalog(folder)], context={"surface": "scene"})
    server = build_server(presets, ServeConfig(tool_budget=budget, discovery="search"))
    server.discovery.index()
    return server


def measure(rounds: int, budget: int) -> dict[str, Any]:
    from agent_presets.lib.budget import Budget, get_tokenizer

    folder = Path(tempfile.mkdtemp(prefix="presets-toolsearch-"))
    server = build(folder, budget)
    discovery = server.discovery
    names = {
        a.id: server.presets.tool_adapters.mcp_name(a) for a in server.presets.tool_adapters.list()
    }
    asked = queries()
    ranks: list[int | None] = []
    misses: list[dict[str, Any]] = []
    for item in asked:
        found = [r["name"] for r in discovery.search(item["query"], TOP, None)["results"]]
        want = names[item["tool"]]
        rank = found.index(want) + 1 if want in found else None
        ranks.append(rank)
        if rank is None:
            misses.append({**item, "got": found[:3]})
    times: list[float] = []
    for _ in range(rounds):
        for item in asked:
            start = time.perf_counter()
            discovery.search(item["query"], TOP, None)
            times.append((time.perf_counter() - start) * 1000)
    counter = Budget(get_tokenizer())  # as the default client (toolformats) sends its model
    full = server._visible(server.tool_entries(), None)
    full_tokens = sum(counter.entry(e) for e in full)
    narrowed = discovery.narrow(full, discovery._own(full))
    listed_tokens = sum(counter.entry(e) for e in narrowed.entries)
    server.close()
    top5 = sum(r is not None for r in ranks) / len(ranks)
    top1 = sum(r == 1 for r in ranks) / len(ranks)
    times.sort()
    return {
        "tools": len(server.presets.tool_adapters),
        "presets": len(server.presets.registry),
        "queries": len(asked),
        "top5": round(top5, 3),
        "top1": round(top1, 3),
        "search_ms_median": round(statistics.median(times), 3),
        "search_ms_p95": round(times[int(len(times) * 0.95)], 3),
        "searches": len(times),
        "list_tokens_no_budget": full_tokens,
        "list_tools_no_budget": len(full),
        "budget": budget,
        "list_tokens_budget": listed_tokens,
        "list_tools_budget": len(narrowed.entries),
        "misses": misses,
        "ok": top5 >= TARGET
        and statistics.median(times) <= SEARCH_TARGET_MS
        and listed_tokens <= budget,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--budget", type=int, default=DEFAULT_BUDGET)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    figures = measure(args.rounds, args.budget)
    if args.json:
        print(json.dumps(figures, indent=1))
        return 0 if figures["ok"] else 1
    print(f"catalog: {figures['tools']} tools in {figures['presets']} presets, all active")
    print(
        f"top-{TOP}: {figures['top5']:.0%} of {figures['queries']} queries "
        f"(target {TARGET:.0%}); top-1: {figures['top1']:.0%}"
    )
    print(
        f"search: median {figures['search_ms_median']:.2f} ms, p95 "
        f"{figures['search_ms_p95']:.2f} ms over {figures['searches']} searches "
        f"(target median {SEARCH_TARGET_MS:.0f} ms)"
    )
    print(
        f"tools/list: {figures['list_tokens_no_budget']:,} tokens for "
        f"{figures['list_tools_no_budget']} tools without a budget; "
        f"{figures['list_tokens_budget']:,} tokens for {figures['list_tools_budget']} tools "
        f"with --tool-budget {figures['budget']:,}"
    )
    for miss in figures["misses"]:
        print(f"  missed: {miss['query']!r} -> {miss['tool']} (got {miss['got']})")
    print("ok" if figures["ok"] else "FAILED")
    return 0 if figures["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
