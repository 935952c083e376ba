"""Stripe's own API types as the judge of every request stpd sends to a stripe-test-server.

The official ``stripe`` package (pinned in requirements-test.txt) is generated from Stripe's
OpenAPI spec: each service method names its endpoint (``"/v1/payment_intents/{intent}/confirm"``)
and its params TypedDict (``stripe/params/``). ``StripeTypes`` reads those pairs from the
package's source, finds the type for a request's method and path, and checks the request's form
(as the stand-in's request log decodes it) against it:

- no field the type lacks, and every field it requires;
- an enum's value among those Stripe lists (stripe-python adds ``|str`` beside an enum's
  ``Literal`` for forward compatibility; here the ``Literal`` is the rule);
- nested hashes and arrays recursively; scalars as form text (digits for an integer,
  ``true``/``false`` for a boolean; ``""`` where Stripe lets a value be emptied).

``ALLOWED`` lists, each with its reason, what the iOS SDK sends with a publishable key that
Stripe accepts and the server-side types omit, and ``SDK_ENDPOINTS`` the endpoints the SDK calls
that the package does not list at all, with the params the SDK sends them. A new endpoint or field
needs no change here: only what the types cannot know goes into ``ALLOWED``.
"""

from __future__ import annotations

import ast
import importlib
import re
import sys
import typing
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from typing_extensions import NotRequired, TypedDict, is_typeddict  # the stripe package's are typing_extensions'

from stripe_servers import TEST_CALL_PREFIX

Problem = tuple[str, str]  # (the field, as a form key: a[b][0]; what is wrong with it)


@dataclass(frozen=True)
class Allowance:
    """FIELD (a form key, and what is under it) on METHOD and one of PATHS (templates as the
    package writes them), sent with a key of one of KEYS (the request log's ``auth``); with VALUE,
    only that value. ``{type}`` stands for the name the request's own ``type`` gives."""
    method: str
    paths: tuple[str, ...]
    field: str
    keys: frozenset[str]
    why: str
    value: str | None = None


PUBLISHABLE = frozenset({"publishable"})
CONFIRMS = ("/v1/payment_intents/{intent}/confirm", "/v1/setup_intents/{intent}/confirm")
VERIFIES = ("/v1/payment_intents/{intent}/verify_microdeposits", "/v1/setup_intents/{intent}/verify_microdeposits")

ALLOWED = (
    Allowance("POST", CONFIRMS, "client_secret", PUBLISHABLE,
              "STPPaymentIntentParams, STPSetupIntentConfirmParams: a publishable key confirms with the "
              "intent's client secret"),
    Allowance("POST", VERIFIES, "client_secret", PUBLISHABLE,
              "STPAPIClient.verifyPaymentIntentWithMicrodeposits (and its SetupIntent form): a publishable key "
              "verifies with the intent's client secret"),
    Allowance("POST", CONFIRMS, "payment_method_data[card]", PUBLISHABLE,
              "STPPaymentMethodParams: the SDK sends a new card's details with a publishable key; the types "
              "leave raw card data out, which a server key may send only with Stripe's approval"),
    Allowance("POST", CONFIRMS, "payment_method_data[type]", PUBLISHABLE, "the same card's type", value="card"),
    Allowance("POST", CONFIRMS, "mandate_data[customer_acceptance][online][infer_from_client]", PUBLISHABLE,
              "STPMandateDataParams: with a publishable key the SDK lets Stripe take the customer's IP "
              "address and user agent from the request"),
    Allowance("POST", ("/v1/sources", "/v1/payment_methods"), "payment_user_agent", PUBLISHABLE,
              "STPAPIClient.paramsAddingPaymentUserAgent: the SDK names itself on a new Source or "
              "PaymentMethod (stripe-ios/<version>; stpd sends stpd/<version>)"),
    Allowance("POST", CONFIRMS, "payment_method_data[payment_user_agent]", PUBLISHABLE,
              "the same signal on a confirmation's new PaymentMethod (STPAPIClient.confirmPaymentIntent, "
              "confirmSetupIntent)"),
    Allowance("POST", ("/v1/sources",), "{type}", frozenset({"publishable", "secret", "restricted"}),
              "STPSourceParams: a Source's own details go in the hash its type names (card[number], "
              "sofort[country], ...), which the types leave out"),
)


# What the SDK sends to an intent's refresh endpoint (STPAPIClient.refreshPaymentIntent,
# refreshSetupIntent): the client secret under a publishable key, and the expansion. (The functional
# form: this module's postponed annotations would hide NotRequired from the class form.)
_RefreshParams = TypedDict("_RefreshParams", {"client_secret": NotRequired[str], "expand": NotRequired[list[str]]})

# What the SDK sends to Stripe's card metadata service (STPBINRange.retrieve): the publishable key
# and a six-digit BIN prefix, as a query.
_CardMetadataParams = TypedDict("_CardMetadataParams", {"key": str, "bin_prefix": str})


# Endpoints the SDK calls that the package does not list: (method, template, params, why).
SDK_ENDPOINTS = (
    ("POST", "/v1/payment_intents/{intent}/refresh", _RefreshParams,
     "STPPaymentHandler.retrieveOrRefreshPaymentIntent: Cash App and Klarna (supportsRefreshing) re-read "
     "the intent through refresh, since it \"often isn't updated instantaneously\" after the app-to-app return"),
    ("POST", "/v1/setup_intents/{intent}/refresh", _RefreshParams,
     "the same, retrieveOrRefreshSetupIntent"),
    ("GET", "/edge-internal/card-metadata", _CardMetadataParams,
     "STPBINController.retrieveBINRanges: a UnionPay prefix's account ranges and their lengths (19-digit cards)"),
)


class StripeTypes:
    """The ``stripe`` package's endpoints: (method, path template) -> params TypedDicts."""

    def __init__(self, package_dir: Path | None = None):
        if package_dir is None:
            import stripe
            package_dir = Path(stripe.__file__).parent
        found: dict[tuple[str, str], list[str | type]] = {}
        for module in sorted(package_dir.rglob("_*_service.py")):
            for method, template, params in _service_endpoints(module):
                if template.startswith("/v1/"):  # /v2 takes JSON bodies, not forms
                    found.setdefault((method.upper(), template), []).append(params)
        for method, template, params, _ in SDK_ENDPOINTS:
            found.setdefault((method, template), []).append(params)
        self.routes = [(method, re.compile("^" + re.sub(r"\\\{\w+\\\}", "[^/]+", re.escape(template)) + "$"),
                        template, types) for (method, template), types in found.items()]
        # A literal segment wins over a placeholder (/v1/payment_intents/search over /{intent}).
        self.routes.sort(key=lambda route: route[2].count("{"))
        self._hints: dict[type, dict[str, Any]] = {}

    def endpoint(self, method: str, path: str) -> tuple[str, list[type]] | None:
        """The template and params types of METHOD PATH, or None when Stripe has no such endpoint."""
        for route_method, pattern, template, types in self.routes:
            if route_method == method and pattern.match(path):
                return template, [_load(name) for name in types]
        return None

    def problems(self, request: dict) -> list[str]:
        """What the types refuse in REQUEST (a request-log entry: method, path, form, auth)."""
        method, path, form = request["method"], request["path"], request.get("form") or {}
        found = self.endpoint(method, path)
        if found is None:
            return ["no such endpoint in Stripe's API"]
        template, types = found
        allowed = [a for a in ALLOWED
                   if a.method == method and template in a.paths and request.get("auth") in a.keys]
        # An endpoint the package lists twice: the type that fits best.
        problems = min((self.check(form, params, "") for params in types), key=len)
        return [f"{field}: {what}" for field, what in problems
                if not any(_covers(allowance, field, form) for allowance in allowed)]

    def check(self, value: Any, annotation: Any, field: str) -> list[Problem]:
        """What is wrong with VALUE (form text, a hash or an array) as ANNOTATION, at FIELD."""
        origin, args = typing.get_origin(annotation), typing.get_args(annotation)
        if annotation is Any:
            return []
        if origin in (typing.NotRequired, typing.Required):
            return self.check(value, args[0], field)
        if is_typeddict(annotation):
            return self._check_hash(value, annotation, field)
        if origin is typing.Union:
            return self._check_union(value, args, field)
        if origin is typing.Literal:
            options = [_form_text(option) for option in args]
            return [] if value in options else [(field, f"{value!r} is not one of {options}")]
        if origin is list:
            if not isinstance(value, list):
                return [(field, f"expected an array, got {value!r}")]
            return [p for index, item in enumerate(value) for p in self.check(item, args[0], f"{field}[{index}]")]
        if _shape(annotation) == "hash":  # Dict[str, X], the package's UntypedStripeObject[X]
            # A hash with keys 0, 1, ... decodes as an array.
            items = enumerate(value) if isinstance(value, list) else value.items() if isinstance(value, dict) else None
            if items is None:
                return [(field, f"expected a hash, got {value!r}")]
            return [p for key, item in items for p in self.check(item, args[-1], _join(field, str(key)))]
        return _check_scalar(value, annotation, field)

    def _check_hash(self, value: Any, params: type, field: str) -> list[Problem]:
        if not isinstance(value, dict):
            return [(field, f"expected a hash, got {value!r}")]
        hints = self.hints(params)
        problems = [(_join(field, key), "unknown field") for key in value if key not in hints]
        problems += [(_join(field, key), "required, missing") for key in sorted(params.__required_keys__)
                     if key in hints and key not in value]
        for key, item in value.items():
            if key in hints:
                problems += self.check(item, hints[key], _join(field, key))
        return problems

    def _check_union(self, value: Any, options: tuple, field: str) -> list[Problem]:
        literals = [v for o in options if typing.get_origin(o) is typing.Literal for v in typing.get_args(o)]
        if any(v != "" for v in literals):
            options = tuple(o for o in options if o is not str)  # an enum's forward-compatible `str`
        attempts = [self.check(value, option, field) for option in options]
        if any(not attempt for attempt in attempts):
            return []
        scalars = [o for o in options if _shape(o) == "text" and typing.get_origin(o) is not typing.Literal]
        if isinstance(value, str) and literals and not scalars:
            return [(field, f"{value!r} is not one of {[_form_text(v) for v in literals]}")]
        # Else what the option of the value's own shape (a hash, an array, or text) says, an
        # emptiable field's Literal[''] last.
        shaped = [a for o, a in sorted(zip(options, attempts), key=lambda pair: typing.get_origin(pair[0]) is typing.Literal)
                  if _shape(o) == _shape_of(value)]
        return min(shaped or attempts, key=len)

    def hints(self, params: type) -> dict[str, Any]:
        """The wire fields of PARAMS and their types: its annotations, less the client's own
        RequestOptions (api_key, idempotency_key, ...), resolved in the module of PARAMS."""
        if params not in self._hints:
            from stripe._request_options import RequestOptions
            fields = {k: v for k, v in params.__annotations__.items() if k not in RequestOptions.__annotations__}
            self._hints[params] = typing.get_type_hints(
                SimpleNamespace(__annotations__=fields), globalns=vars(sys.modules[params.__module__]),
                include_extras=True)
        return self._hints[params]


class RequestCheck:
    """stpd's requests to the session's stripe-test-servers, with the test that caused each,
    checked at the end of the session (conftest.py)."""

    def __init__(self):
        self.requests: list[tuple[str, dict]] = []

    def collect(self, test: str, requests: list[dict]) -> None:
        """Keeps stpd's requests to the API, not the tests' own (``StripeLike.api`` marks those)
        nor a browser's on the stand-in's bank pages (its ``/favicon.ico``)."""
        for request in requests:
            if not (request.get("idempotency_key") or "").startswith(TEST_CALL_PREFIX) \
                    and request.get("path", "").startswith(("/v1/", "/v2/", "/edge-internal/")):
                self.requests.append((test, request))

    def findings(self, types: StripeTypes | None = None) -> list[str]:
        """One line per problem: the request, the key it was sent with, the test, what is wrong."""
        if not self.requests:
            return []
        types = types or StripeTypes()
        return [f"{request['method']} {request['path']} ({request.get('auth')} key, {test}): {problem}"
                for test, request in self.requests for problem in types.problems(request)]


def _service_endpoints(module: Path):
    """(method, path template, params type) of each service method in MODULE, read from its
    source: ``self._request("post", "/v1/...".format(...), ..., params=params)`` and the
    ``params: Optional["XParams"]`` annotation; the type's module from the file's imports."""
    tree = ast.parse(module.read_text())
    modules = {alias.asname or alias.name: node.module for node in ast.walk(tree)
               if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("stripe.params")
               for alias in node.names}
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef):  # the async twins repeat the same endpoints
            continue
        annotation = next((a.annotation for a in function.args.args if a.arg == "params"), None)
        name = re.search(r"\w+Params\b", ast.unparse(annotation) if annotation else "")
        if name is None or name[0] not in modules:
            continue
        for call in ast.walk(function):
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "_request":
                method, path = call.args[0], call.args[1]
                if isinstance(path, ast.Call):  # "/v1/x/{id}".format(id=...)
                    path = path.func.value
                yield method.value, path.value, f"{modules[name[0]]}.{name[0]}"


def _covers(allowance: Allowance, field: str, form: dict) -> bool:
    """Whether ALLOWANCE covers a problem at FIELD (the field itself or anything under it)."""
    allowed = allowance.field.replace("{type}", str(form.get("type", "")))
    if field != allowed and not field.startswith(allowed + "["):
        return False
    return allowance.value is None or _value_at(form, allowed) == allowance.value


def _value_at(form: dict, field: str) -> Any:
    value: Any = form
    for key in re.findall(r"[^\[\]]+", field):
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _load(dotted: str | type) -> type:
    if not isinstance(dotted, str):  # one of SDK_ENDPOINTS' own types
        return dotted
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _check_scalar(value: Any, annotation: Any, field: str) -> list[Problem]:
    """VALUE as the form sends a scalar of ANNOTATION: text, digits for an integer, true/false."""
    patterns = {str: r"(?s).*", int: r"-?\d+", float: r"-?\d+(\.\d+)?", bool: r"true|false"}
    name = getattr(annotation, "__name__", str(annotation))
    if annotation not in patterns:
        return [(field, f"a value of {name}, which the check cannot read")]
    if not isinstance(value, str) or not re.fullmatch(patterns[annotation], value):
        return [(field, f"{value!r} is not {name}")]
    return []


def _form_text(option: Any) -> str:
    """A Literal option as the form writes it."""
    return "true" if option is True else "false" if option is False else str(option)


def _shape(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    if is_typeddict(annotation) or origin is dict or getattr(origin, "__name__", "") == "UntypedStripeObject":
        return "hash"
    return "array" if origin is list else "text"


def _shape_of(value: Any) -> str:
    return "hash" if isinstance(value, dict) else "array" if isinstance(value, list) else "text"


def _join(field: str, key: str) -> str:
    return f"{field}[{key}]" if field else key
