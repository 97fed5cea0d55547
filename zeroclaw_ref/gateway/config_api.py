"""The gateway's configuration API and dashboard page (config.md §13.1 to §13.3).

Routes (below `gateway.path_prefix`, all authenticated by `server.py`, ACP-GW-12):

- `GET /api/config?path=` one leaf as `config get --json`, or a masked subtree (CFG-UI-02);
- `PUT /api/config` `{"path", "value"}` as `config set --no-interactive` (CFG-UI-04);
- `POST /api/config/map-key?path=mcp.servers&key=` creates a server (CFG-UI-05);
- `DELETE /api/config/map-key?path=&key=` as `config unset <path>.<key>` (CFG-UI-06);
- `POST /api/config/rename-map-key?path=mcp.servers&from=&to=` (CFG-UI-07);
- `GET /config` the self-contained dashboard (CFG-UI-08).

Every write goes through `config/write.py`, which serialises writers with a file lock and
re-reads the file under it, so concurrent requests never lose an update. Refusals are
`400 {"error"}` with the command's text (CFG-UI-03); secret values are never decrypted here,
so none can reach a response.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from zeroclaw_ref.config import write
from zeroclaw_ref.config.build import sub, table_list
from zeroclaw_ref.config.edit import SERVERS_PATH, parse_path
from zeroclaw_ref.config.env import apply_overrides
from zeroclaw_ref.config.load import check_document, read_config_file
from zeroclaw_ref.config.model import ConfigError
from zeroclaw_ref.config.schema import ROOT, Field, Kind, MapOf, Node, Table, TableList
from zeroclaw_ref.config.view import Leaf, get_leaf, read_view, render_json
from zeroclaw_ref.core.jsontypes import JSON, JSONObject, loads

from .request import HttpRequest, Reply, Route

BAD_BODY = 'body must be a JSON object with string "path" and "value"'
ONLY_SERVERS = "only path=mcp.servers is supported"
MISSING = "missing query parameter: {name}"
_PAGE = "dashboard.html"
# The token travels in the page's URL; keep it out of caches and referrers, and let the page
# load nothing but itself (CFG-UI-08: no external asset).
_PAGE_HEADERS = (
    ("Cache-Control", "no-store"),
    ("Referrer-Policy", "no-referrer"),
    ("X-Content-Type-Options", "nosniff"),
    (
        "Content-Security-Policy",
        "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
        "connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'",
    ),
)


def _refused(exc: ConfigError) -> Reply:
    """[CFG-UI-03] the command's lines, without `ERROR: `, as one error text."""
    return Reply.error(400, "\n".join(exc.lines))


def _dirs(request: HttpRequest) -> tuple[Path, Path]:
    return request.config.config_dir, request.config.data_dir


def _written(request: HttpRequest, outcome: write.Outcome, key_path: str | None) -> Reply:
    """[CFG-UI-03] the command's confirmation line and its warnings (CFG-CLI-17, CFG-CLI-25)."""
    warnings: list[JSON] = []
    if outcome.changed:
        config_dir, data_dir = _dirs(request)
        environ = request.state.deps.config.environ
        warnings += write.follow_up_warnings(config_dir, data_dir, key_path, environ)
    return Reply.json(200, {"message": outcome.message, "warnings": warnings})


# --- reading -------------------------------------------------------------------------------


def _server_order(config_dir: Path, request: HttpRequest) -> list[str]:
    """The server names in file order, after environment overrides (as `read_view` sees)."""
    source = read_config_file(config_dir)
    _, tree = check_document(source.path, source.text)
    apply_overrides(tree, request.state.deps.config.environ)
    servers = table_list(sub(tree, "mcp"), "servers")
    return [str(server.get("name")) for server in servers]


class _Subtree:
    """[CFG-UI-02] assembles a masked subtree from the leaves `config list` shows."""

    def __init__(self, leaves: list[Leaf], servers: list[str]) -> None:
        self.leaves = leaves
        self.by_path = {leaf.path: leaf for leaf in leaves}
        self.servers = servers

    def shape(self, node: Node, path: str) -> JSON:
        if isinstance(node, Table):
            return {key: self.shape(child, _join(path, key)) for key, child in node.fields.items()}
        if isinstance(node, Field) and node.kind is Kind.STR_MAP:
            # A secret map shows its entry names only, sorted.
            prefix = path + "."
            names = sorted(x.path[len(prefix) :] for x in self.leaves if x.path.startswith(prefix))
            shown: list[JSON] = list(names)
            return shown
        if isinstance(node, MapOf):
            aliases = sorted(
                {
                    leaf.path[len(path) + 1 :].split(".", 1)[0]
                    for leaf in self.leaves
                    if leaf.path.startswith(path + ".")
                }
            )
            return {alias: self.shape(node.entry, f"{path}.{alias}") for alias in aliases}
        if isinstance(node, TableList) and path == SERVERS_PATH:
            return [self.shape(node.entry, f"{path}.{name}") for name in self.servers]
        leaf = self.by_path.get(path) or get_leaf(self.leaves, path)
        return render_json(leaf)["value"]


def _join(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if prefix else key


def get_config(request: HttpRequest) -> Reply:
    """[CFG-UI-02] one leaf as `config get --json`, else `{"path", "value": <subtree>}`."""
    key_path = request.query.get("path", "")
    config_dir, _ = _dirs(request)
    try:
        leaves = read_view(config_dir, request.state.deps.config.environ)
        node: Node = ROOT if not key_path else parse_path(key_path).node
        subtree = isinstance(node, Table | MapOf) or key_path == SERVERS_PATH
        if isinstance(node, Field) and node.kind is Kind.STR_MAP:
            subtree = True
        if not subtree:
            return Reply.json(200, render_json(get_leaf(leaves, key_path)))
        builder = _Subtree(leaves, _server_order(config_dir, request))
        answer: JSONObject = {"path": key_path, "value": builder.shape(node, key_path)}
    except ConfigError as exc:
        return _refused(exc)
    return Reply.json(200, answer)


# --- writing -------------------------------------------------------------------------------


def put_config(request: HttpRequest) -> Reply:
    """[CFG-UI-04] `config set --no-interactive <path> <value>`, texts included."""
    try:
        body: JSON = loads(request.body)
    except ValueError:
        body = None
    if not isinstance(body, dict):
        return Reply.error(400, BAD_BODY)
    key_path, value = body.get("path"), body.get("value")
    if not isinstance(key_path, str) or not isinstance(value, str):
        return Reply.error(400, BAD_BODY)
    try:
        outcome = write.set_text(request.config.config_dir, key_path, value)
    except ConfigError as exc:
        return _refused(exc)
    return _written(request, outcome, key_path)


def _params(request: HttpRequest, *names: str) -> list[str] | Reply:
    """The named query parameters, or the refusal naming the first one missing."""
    values: list[str] = []
    for name in names:
        value = request.query.get(name)
        if value is None:
            return Reply.error(400, MISSING.format(name=name))
        values.append(value)
    return values


def create_map_key(request: HttpRequest) -> Reply:
    """[CFG-UI-05] append a server named `key`; `Created mcp.servers.<key>`."""
    params = _params(request, "path", "key")
    if isinstance(params, Reply):
        return params
    path, key = params
    if path != SERVERS_PATH:
        return Reply.error(400, ONLY_SERVERS)
    try:
        outcome = write.create_server(request.config.config_dir, key)
    except ConfigError as exc:
        return _refused(exc)
    return _written(request, outcome, None)


def delete_map_key(request: HttpRequest) -> Reply:
    """[CFG-UI-06] exactly `config unset <path>.<key>` (CFG-CLI-19)."""
    params = _params(request, "path", "key")
    if isinstance(params, Reply):
        return params
    path, key = params
    key_path = f"{path}.{key}"
    try:
        outcome = write.unset(request.config.config_dir, key_path)
    except ConfigError as exc:
        return _refused(exc)
    return _written(request, outcome, key_path)


def rename_map_key(request: HttpRequest) -> Reply:
    """[CFG-UI-07] rename a server in place, as `config rename`."""
    params = _params(request, "path", "from", "to")
    if isinstance(params, Reply):
        return params
    path, old, new = params
    if path != SERVERS_PATH:
        return Reply.error(400, ONLY_SERVERS)
    try:
        outcome = write.rename_server(request.config.config_dir, old, new)
    except ConfigError as exc:
        return _refused(exc)
    return _written(request, outcome, None)


# --- the page ------------------------------------------------------------------------------


def dashboard(request: HttpRequest) -> Reply:
    """[CFG-UI-08] the self-contained page; it reads the token from `?token=` itself."""
    page = resources.files("zeroclaw_ref.gateway").joinpath(_PAGE).read_bytes()
    return Reply(200, page, "text/html; charset=utf-8", _PAGE_HEADERS)


ROUTES: dict[tuple[str, str], Route] = {
    ("GET", "/api/config"): get_config,
    ("PUT", "/api/config"): put_config,
    ("POST", "/api/config/map-key"): create_map_key,
    ("DELETE", "/api/config/map-key"): delete_map_key,
    ("POST", "/api/config/rename-map-key"): rename_map_key,
    ("GET", "/config"): dashboard,
}
