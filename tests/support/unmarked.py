"""The Python half of the check that every text a reader sees is marked for translation
(tests/test_i18n_python.py; the templates' half is in tests/test_i18n.py).

A module is parsed with `ast`, and the strings that reach a reader are looked for where they
are handed over: a form field's label, a ValidationError, a flash message, a refusal a page
shows, a table of labels a template prints... (the sinks below, each with why a reader sees
it). A string counts as marked when it is the direct argument of a gettext function (any alias
the module imports). What a sink is given is followed through conditional expressions,
concatenations, f-strings, the values `%` puts into a marked format, the local names of the
function and the return values of the module's own functions.

The API rule: the API is used by scripts, and its error texts stay in English (identifiers to
them): json_error(...) and the request-body schema's SchemaError are no sinks. A text that a
page shows as well (ChangeRefused, InvalidReset, Http404, PermissionDenied...) is marked; the
API answers in English whatever language the request asks for
(consumers/languages/middleware.py), so scripts still read the English text.

Not looked at, on purpose: log messages, management commands and the CLI (an operator's
terminal), system checks and settings errors, metrics' HELP texts, notifications (e-mail,
webhooks: sent outside any reader's request, in LANGUAGE_CODE until they use
languages.preferences.language_for_address), and texts a worker stores for every reader (the poll's
documents beyond the evidence and diagnostics the pages parse back, job and run outcomes, report
titles and report file columns: the CSV/XLSX headers are read by scripts too)."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from tests.support.source import parse

MARKERS = {
    "gettext", "gettext_lazy", "gettext_noop", "ngettext", "ngettext_lazy",
    "pgettext", "pgettext_lazy", "npgettext", "npgettext_lazy",
}  # fmt: skip

# keyword arguments a reader sees as text, whatever the call: form and model fields, admin
SHOWN_KEYWORDS = {"label", "help_text", "empty_label", "verbose_name", "verbose_name_plural"}

# calls whose arguments a reader sees: the callee's (last) name -> (position, keyword) pairs
SHOWN_ARGUMENTS = {
    # Django: a form's errors
    "ValidationError": [(0, "message")],
    "add_error": [(1, "error")],
    # the 403 and 404 pages show what the view said (consumers/web/errors.py: _said)
    "PermissionDenied": [(0, None)],
    "Http404": [(0, None)],
    # the console's bad-request page
    "bad_request": [(1, "message")],
    # the refusals the pages show (and the API, in English): core.py's one refusal, and the
    # project's exceptions the views show as they are or pass on as a ChangeRefused or an Http404
    "ChangeRefused": [(0, "message")],
    "InvalidReset": [(0, None)],  # the reset form and its preview
    "TargetRefused": [(0, None)],  # dlq/redrive.py: a ChangeRefused
    "MessageNotFound": [(0, None)],  # dlq and message pages: an Http404
    "NoSuchTopic": [(0, None)],  # the message search page
    "ReportRefused": [(0, None)],  # the report form: bad_request
    "RunRefused": [(0, None)],  # the statistics page: bad_request
    "TokenRefused": [(0, None)],  # the API token page: a form error
    "PatternError": [(0, None)],  # grant and token forms: a ValidationError
    "SignInError": [(1, "message")],  # the sign-in-failed page
    # what the refusals above are made of: what was being done ("requesting a reset")
    "require_role": [(2, "doing")],
    "_operator": [(1, "what")],  # alerts/views.py
    # what the pages' findings say: a group's allocation diagnostics, a message's track and
    # search, the reset preview's warnings, a group's freshness (the tooltips of its unknowns)
    "Diagnostic": [(2, "message")],  # kept in English in the poll's documents: gettext_noop
    "ClientTrack": [(3, "why")],
    "Found": [(0, "how"), (2, "problems"), (3, "note")],
    "Defect": [(3, "text")],
    "Freshness": [(1, "reason")],
    "Target": [(None, "note")],  # a reset plan's row that stays as it is, and why
}

# django.contrib.messages: messages.<level>(request, text)
MESSAGE_LEVELS = {"debug", "info", "success", "warning", "error"}

# attributes whose text a page shows (x.why = ...), and lists of texts (x.notes.append(...))
TEXT_ATTRIBUTES = {"why", "copies_error", "committed_error", "connection_error"}
TEXT_LISTS = {"notes", "problems", "warnings"}

# module constants that are text for the pages (a table's values, not its keys; of a
# (name, text) pair, the text), and functions whose return value is
TEXT_CONSTANTS = {"LABELS", "PROMPTS", "IN_FLIGHT_NOTE", "UNDO_NOTE", "BAD_CURSOR"}
TEXT_FUNCTIONS = {
    "awaiting_poll_message", "target_description", "text_problem", "moment_problem", "effect_changed",
    "resets/effect.py:change",
}  # fmt: skip

# plotly figures the pages draw: trace names, titles, axis titles, annotations
FIGURE_KEYWORDS = {"name", "annotation_text"}
FIGURE_KEYS = {"text", "title"}

# strings under these keys name things for a template (a navigation tab, who cancels, the names
# of hidden fields), in any dict a sink gets
NAME_KEYS = {"nav", "cancel_as", "period_hidden"}

# The forms whose fields a page shows with their labels (as_p, label_tag, a loop over the form):
# a field there without label= is labelled by Django from its name, in English
LABELLED_FORMS = {
    "DlqFilterForm", "RedriveForm", "ChangeFilterForm", "AuditFilterForm", "ResetForm", "FindForm",
    "ReportForm", "SilenceForm", "TokenForm",
}  # fmt: skip

# The allow-list: strings that are identifiers, never translated (locale/zh_Hans/GLOSSARY.md).
# A string with no two consecutive letters outside markup is no text (numbers, punctuation,
# placeholders, tags); a single token that is snake_case, camelCase or ALL-CAPS, or holds one
# of . % @ # / : or a digit, names something: a field (next_cursor), a state (STALLED), a
# prefix (%DLQ%, f"%DLQ%{group}"), a queue (topic@broker#0), a file, a setting
IDENTIFIER_TOKEN = re.compile(r"[A-Za-z0-9_.%@#/:+{}-]+")
IDENTIFIER_SHAPE = re.compile(r"[_.%@#/:\d]|[a-z][A-Z]|^[A-Z]{2,}$")
# ...and the names those shapes miss: the cluster states a page shows as they are, a format
IDENTIFIERS = {"awaiting poll", "never polled", "csv"}


@dataclass(frozen=True)
class Unmarked:
    path: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.text!r}"


def is_identifier(text: str) -> bool:
    text = text.strip()
    if not re.search(r"[A-Za-z]{2}", re.sub(r"<[^>]*>", " ", text)) or text in IDENTIFIERS:
        return True
    return bool(IDENTIFIER_TOKEN.fullmatch(text) and IDENTIFIER_SHAPE.search(text))


def unmarked_in(source: str, path: str = "<source>") -> list[Unmarked]:
    """The strings of one module that reach a reader unmarked, in the order of the source."""
    found = _Module(parse(source), path).check()
    return sorted(set(found), key=lambda u: (u.line, u.text))


def unmarked_under(*roots: Path, base: Path) -> list[Unmarked]:
    found = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            if "migrations" not in path.parts:
                found += unmarked_in(path.read_text(), str(path.relative_to(base)))
    return found


def _name(node) -> str:
    """The last name of a callee, a base class, an attribute: forms.ValidationError -> ValidationError."""
    if isinstance(node, ast.Call):
        node = node.func
    return node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")


def _argument(call: ast.Call, position: int | None, keyword: str | None) -> ast.expr | None:
    if position is not None and len(call.args) > position and not isinstance(call.args[position], ast.Starred):
        return call.args[position]
    return next((k.value for k in call.keywords if keyword and k.arg == keyword), None)


class _Module:
    def __init__(self, tree: ast.Module, path: str):
        self.tree, self.path = tree, path
        self.parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        self.markers, self.messages, self.figures = set(), set(), set()
        self.functions = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "django.utils.translation":
                self.markers |= {a.asname or a.name for a in node.names if a.name in MARKERS}
            elif isinstance(node, ast.ImportFrom) and node.module == "django.contrib":
                self.messages |= {a.asname or a.name for a in node.names if a.name == "messages"}
            elif isinstance(node, ast.Import):
                self.figures |= {a.asname or a.name for a in node.names if a.name == "plotly.graph_objects"}
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                self.functions.setdefault(node.name, node)
        self.found: list[Unmarked] = []

    def check(self) -> list[Unmarked]:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call):
                self._call(node)
            elif isinstance(node, ast.Assign):
                self._assign(node)
            elif isinstance(node, ast.ClassDef):
                self._class(node)
            elif isinstance(node, ast.FunctionDef) and self._text_function(node.name):
                self._text(self._returns(node))
        return self.found

    def _text_function(self, name: str) -> bool:
        """A function in TEXT_FUNCTIONS, by name or as path:name."""
        return name in TEXT_FUNCTIONS or any(
            entry.endswith(f":{name}") and self.path.endswith(entry.split(":")[0]) for entry in TEXT_FUNCTIONS
        )

    # -- the sinks

    def _call(self, call: ast.Call) -> None:
        name = _name(call)
        for keyword in call.keywords:
            if keyword.arg in SHOWN_KEYWORDS:
                self._text(keyword.value)
            elif keyword.arg == "error_messages" and isinstance(keyword.value, ast.Dict):
                self._text(keyword.value.values)
            elif keyword.arg == "choices":
                self._choices(keyword.value)
        for position, keyword in SHOWN_ARGUMENTS.get(name, ()):
            self._text(_argument(call, position, keyword))
        if name.endswith("Field") and _name(getattr(call.func, "value", None)) == "models" and call.args:
            self._text(call.args[0])  # a model field's verbose_name, given first
        owner = call.func.value if isinstance(call.func, ast.Attribute) else None
        if isinstance(owner, ast.Name) and owner.id in self.messages and name in MESSAGE_LEVELS:
            self._text(_argument(call, 1, "message"))
        elif isinstance(owner, ast.Name) and owner.id in self.figures:
            self._text([k.value for k in call.keywords if k.arg in FIGURE_KEYWORDS])
        elif owner is not None and name in ("update_layout", "add_hline", "add_annotation"):
            self._text([k.value for k in call.keywords if k.arg in FIGURE_KEYWORDS])
            for keyword in call.keywords:
                self._figure_part(keyword.value)
        elif owner is not None and name == "append" and _name(owner) in TEXT_LISTS:
            self._text(_argument(call, 0, None))
        if name == "render" and len(call.args) > 2:
            self._text(call.args[2])

    def _assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            pairs = [(target, node.value)]
            if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                pairs = list(zip(target.elts, node.value.elts, strict=False))
            for one, value in pairs:
                if isinstance(one, ast.Attribute) and one.attr in TEXT_ATTRIBUTES:
                    self._text(value)
                elif isinstance(one, ast.Subscript) and _name(one.value) == "error_messages":
                    self._text(value)
                elif isinstance(one, ast.Name) and one.id in TEXT_CONSTANTS and self.parents.get(node) is self.tree:
                    values = value.values if isinstance(value, ast.Dict) else [value]
                    self._text([v.elts[-1] if isinstance(v, ast.Tuple) else v for v in values])

    def _class(self, node: ast.ClassDef) -> None:
        """A model's Meta names (verbose_name), the labels of a TextChoices, a shown form's fields."""
        choices = any(_name(b).endswith("Choices") for b in node.bases)
        for statement in node.body:
            if not isinstance(statement, ast.Assign):
                continue
            if node.name == "Meta" and any(_name(t) in SHOWN_KEYWORDS for t in statement.targets):
                self._text(statement.value)
            elif choices and isinstance(statement.value, ast.Tuple) and len(statement.value.elts) > 1:
                self._text(statement.value.elts[-1])
            elif node.name in LABELLED_FORMS and self._unlabelled_field(statement.value):
                field = _name(statement.targets[0])
                self.found.append(Unmarked(self.path, statement.lineno, f"{field}: a field without a label"))

    @staticmethod
    def _unlabelled_field(value: ast.expr) -> bool:
        """A form field whose label Django makes from its name (in English): no label=, and shown
        (not a hidden input)."""
        if not (isinstance(value, ast.Call) and _name(value).endswith("Field")):
            return False
        keywords = {k.arg: k.value for k in value.keywords}
        return "label" not in keywords and "HiddenInput" not in ast.unparse(keywords.get("widget", ast.Constant("")))

    def _choices(self, node: ast.expr) -> None:
        """The display halves of (value, label) pairs; a named group's pairs too."""
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            self._choices(node.left)
            self._choices(node.right)
        elif isinstance(node, ast.List | ast.Tuple):
            for pair in node.elts:
                if not (isinstance(pair, ast.Tuple) and len(pair.elts) == 2):
                    continue
                label = pair.elts[1]
                if isinstance(label, ast.List | ast.Tuple):
                    self._choices(label)
                else:
                    self._text(label)
        elif isinstance(node, ast.ListComp) and isinstance(node.elt, ast.Tuple) and len(node.elt.elts) == 2:
            self._text(node.elt.elts[1])

    def _figure_part(self, node: ast.expr) -> None:
        """A layout's titles: {"text": ...} and {"title": ...} at any depth."""
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value in FIGURE_KEYS:
                    self._text(value)
                else:
                    self._figure_part(value)

    # -- what a sink is given

    def _text(self, node, seen: frozenset = frozenset()) -> None:
        """Report every unmarked string `node` may be, following what makes it."""
        if isinstance(node, list):
            for one in node:
                self._text(one, seen)
            return
        if node is None or node in seen:
            return
        seen = seen | {node}
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            self._report(node, node.value)
        elif isinstance(node, ast.JoinedStr):
            self._report(node, "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values))
        elif isinstance(node, ast.IfExp):
            self._text([node.body, node.orelse], seen)
        elif isinstance(node, ast.BoolOp):
            self._text(node.values, seen)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            self._text([node.left, node.right], seen)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            self._formatted(node, seen)
        elif isinstance(node, ast.List | ast.Tuple | ast.Set):
            self._text(node.elts, seen)
        elif isinstance(node, ast.Dict):
            names = [isinstance(k, ast.Constant) and k.value in NAME_KEYS for k in node.keys]
            self._text([v for v, name in zip(node.values, names, strict=True) if not name], seen)
        elif isinstance(node, ast.Name):
            self._text(self._assigned(node), seen)
        elif isinstance(node, ast.Call) and not self._marked(node):
            self._made_by(node, seen)

    def _formatted(self, node: ast.BinOp, seen) -> None:
        """format % values: an unmarked format is text; the values put into a marked one are part
        of the sentence, so the literal words among them are text too."""
        if not self._marked(node.left):
            self._text(node.left, seen)
        elif isinstance(node.right, ast.Dict | ast.Tuple):
            self._text(node.right, seen)

    def _made_by(self, call: ast.Call, seen) -> None:
        """What a call makes: a format's text ("...".format(...), "...".strip()); a call of the
        module's own function, its returns."""
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in ("format", "strip", "rstrip", "lstrip"):
            self._text(func.value, seen)
        elif isinstance(func, ast.Name) and func.id in self.functions:
            self._text(self._returns(self.functions[func.id]), seen)

    @staticmethod
    def _returns(function) -> list[ast.expr]:
        return [n.value for n in ast.walk(function) if isinstance(n, ast.Return) and n.value is not None]

    def _marked(self, node) -> bool:
        if not isinstance(node, ast.Call):
            return False
        func = node.func
        if isinstance(func, ast.Name):
            return func.id in self.markers
        return isinstance(func, ast.Attribute) and func.attr in MARKERS

    def _assigned(self, name: ast.Name) -> list[ast.expr]:
        """What the function that uses `name` assigns to it, else the module (a constant)."""
        scope = self.parents.get(name)
        while scope is not None and not isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
            scope = self.parents.get(scope)
        values = self._assignments(scope, name) if scope is not None else []
        return values or self._assignments(self.tree, name, nested=False)

    def _assignments(self, scope, name: ast.Name, *, nested: bool = True) -> list[ast.expr]:
        values = []
        for node in ast.walk(scope) if nested else scope.body:
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id == name.id:
                        values.append(node.value)
                    elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                        values += [v for t, v in zip(target.elts, node.value.elts, strict=False) if _name(t) == name.id]
            elif isinstance(node, ast.AugAssign | ast.AnnAssign) and _name(node.target) == name.id:
                values.append(node.value)
        return values

    def _report(self, node: ast.expr, text: str) -> None:
        if not is_identifier(text):
            self.found.append(Unmarked(self.path, node.lineno, text))
