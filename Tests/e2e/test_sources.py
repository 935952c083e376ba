"""Sources, their polls, redirect sessions and PaymentIntent redirects, end to end: the real stpd
binary and its socket against the project's stripe-test-server, with stpd holding only the
publishable key (as an app would).

The customer's side is played over HTTP: the "bank page" is the test server's
/_test/redirect/{id}; GETting it with ``action=...`` drives the object and answers 302 with the
app's return URL, which the test hands to stpd with ``handle-url`` as the desktop would. Stripe-side
changes without the customer (a Source expiring, a bank authorizing later) go through
/_test/sources/{id}/{action}.

- the Sofort flow from creation to outcome (merchant name, URL matching, second delivery);
- failed / canceled / still-pending outcomes, and a follow-up poll that ends at its timeout;
- source.poll on its own: chargeable, a 4xx ending it, stopPolling, a replaced poll;
- kill -9 during a redirect and during a poll, restart on the same state directory;
- iDEAL PaymentIntent redirects (succeeded, requires_payment_method); with a secret key, a
  confirmation without the client secret;
- app.background / app.foreground;
- errors, another uid, and --url-opener.

Waits are on events (events.subscribe) and replies, never on sleeps. Where a test shows that
something did NOT happen (a stopped poll never reports), it waits for a later marker instead:
``quiet_marker`` polls a fresh pending Source until its 2 s timeout, which takes three requests
1.5 s apart; a poll still alive would have polled, and reported, within that time. Tests that
stop or pause a poll do so right after a `source.polled` event, i.e. early in the 1.5 s wait
before its next request, so that no request is in flight (one in flight may still finish, as
in the SDK). Every reply and notification is checked against the contract by the conftest's
checker.
"""

from __future__ import annotations

from codes import (INVALID_STATE, PAYMENT_FAILED, REDIRECT_CANCELLED, REDIRECT_LOAD_FAILED, REDIRECT_OPEN_FAILED,
                   RETURN_URL_REQUIRED, STRIPE_CONNECTION)
import json
import os
import shutil
import tempfile
import urllib.parse
from pathlib import Path

import pytest

from flows import (DISABLED, INVALID_PARAMS, NOT_FOUND, REDIRECT_UNAVAILABLE, STRIPE_INVALID_REQUEST, Events,
                   bank_page, create_source, drive_source, query_items, rpc_error, run_as, sofort,
                   stpd_for, stpd_source_gets)
from rpc import Client


RETURN_URL = "myapp://stripe-redirect/done?order=7"
REDIRECT_EVENTS = ["redirect.created", "redirect.started", "redirect.completed", "redirect.outcome"]


def quiet_marker(client: Client, events: Events, return_url: str = "myapp://marker") -> dict:
    """Polls a fresh pending Source with a 2 s timeout and waits for its pollFinished (three
    requests, 1.5 s apart: about 3 s). Returns that event; everything published before it has
    been read into ``events.seen`` (the subscription must include source.pollFinished)."""
    marker, _ = create_source(client, sofort(return_url))
    client.call("source.poll", {"id": marker["id"], "timeout": 2})
    finished = events.wait("source.pollFinished", marker["id"])
    assert finished["object"]["poll"]["sourceStatus"] == "pending", finished
    return finished


def started_session(client: Client, source_id: str, mode: str | None = None, **create: object) -> dict:
    session = client.call("redirect.create", {"source": {"id": source_id}, **create})
    params = {"session": session["id"]}
    if mode is not None:
        params["mode"] = mode
    started = client.call("redirect.start", params)
    assert started["status"] == "inProgress", started
    return started


# -- 1. Sofort, from creation to outcome ----------------------------------------------------------

def with_pending_source(start_stpd, directory: Path, server):
    """stpd on the test server, a client, a `source.*` subscription and a pending Sofort Source:
    where the poll tests start. Returns (daemon, client, events, source)."""
    daemon = stpd_for(start_stpd, directory, server)
    client = daemon.client()
    events = Events(daemon.client(), ["source.*"])
    source, _ = create_source(client, sofort(RETURN_URL))
    return daemon, client, events, source


def test_sofort_redirect_to_chargeable(start_stpd, tmp_path, stripe_test_server):
    server = stripe_test_server
    daemon = stpd_for(start_stpd, tmp_path / "stpd", server, "--merchant-name", "Config Shop")
    events = Events(daemon.client(), ["source.*", "redirect.*"])
    client = daemon.client()

    # source.create: the call's merchant name wins over the configured one, appended once.
    created = client.call("source.create", {"params": sofort(RETURN_URL, statementDescriptor="ORDER 7"),
                                            "merchantName": "Shop & Co"})
    source, secret = created["source"], created["clientSecret"]
    sid = source["id"]
    assert secret.startswith("src_client_secret_")
    assert (source["type"], source["flow"], source["status"], source["usage"]) == ("sofort", "redirect", "pending", "single_use")
    assert source["isReusable"] is False and source["amount"] == 1099 and source["currency"] == "eur"
    assert source["redirect"]["status"] == "pending"
    return_url = source["redirect"]["returnURL"]
    assert return_url.startswith(RETURN_URL + "&")
    items = query_items(return_url)
    assert [v for k, v in items if k == "redirect_merchant_name"] == ["Shop & Co"], return_url
    assert ("order", "7") in items
    assert "client_secret" not in source["source"]  # the Stripe object, without its secret
    # As the SDK's sofortParams: country and statement descriptor under sofort[...].
    assert source["source"]["sofort"] == {"country": "DE", "statement_descriptor": "ORDER 7"}
    # What Stripe got, form-encoded, holds the merchant name once too.
    posted = [r for r in server.requests(path="/v1/sources", method="POST")]
    assert len(posted) == 1 and posted[0]["auth"] == "publishable", posted
    form = urllib.parse.parse_qs(posted[0]["body"])
    assert form["redirect[return_url]"] == [return_url] and form["type"] == ["sofort"]
    assert (form["amount"], form["currency"], form["sofort[country]"]) == (["1099"], ["eur"], ["DE"])
    # The SDK's fraud signal, naming stpd and its version as stripe-ios names itself.
    assert form["payment_user_agent"] == ["stpd/" + client.call("daemon.ping")["version"]]
    assert events.wait("source.created", sid)["object"]["status"] == "pending"

    # The configured merchant name when the call names none; a return URL naming one keeps it.
    default_named, _ = create_source(client, sofort("myapp://other"))
    assert [v for k, v in query_items(default_named["redirect"]["returnURL"]) if k == "redirect_merchant_name"] \
        == ["Config Shop"]
    own, _ = create_source(client, sofort("myapp://own?redirect_merchant_name=Mine"), merchant_name="Shop & Co")
    assert own["redirect"]["returnURL"] == "myapp://own?redirect_merchant_name=Mine"

    # redirect.create → notStarted; redirect.start → inProgress with the URL to open.
    session = client.call("redirect.create", {"source": {"id": sid}, "followUpTimeout": 5})
    rid = session["id"]
    assert rid.startswith("rdr_")
    assert (session["status"], session["kind"], session["sourceId"]) == ("notStarted", "source", sid)
    assert session["returnURL"] == return_url and session["followUpTimeout"] == 5
    assert session["redirectURL"] == source["redirect"]["url"]
    assert session.get("openURL") is None
    started = client.call("redirect.start", {"session": rid})
    assert (started["status"], started["mode"], started["opener"]) == ("inProgress", "automatic", "app")
    assert started["openURL"] == source["redirect"]["url"]
    # Starting again changes nothing.
    assert client.call("redirect.start", {"session": rid, "mode": "inApp"}) == started

    # The customer authorizes at the bank, which sends them back to the app's URL with more items.
    location = bank_page(started["openURL"], "authorize")
    assert location.startswith(return_url + "&"), location
    assert [v for k, v in query_items(location) if k == "redirect_merchant_name"] == ["Shop & Co"]
    assert ("source", sid) in query_items(location)

    # Neither an unrelated URL nor a URL missing a return-URL item completes anything. (A
    # client without the contract check: see test_unhandled_url_reply_names_no_session.)
    unchecked = daemon.client(checker=None)
    for other in ["myapp://stripe-redirect/elsewhere?order=7", "myapp://stripe-redirect/done?order=8",
                  "otherapp://stripe-redirect/done?order=7", "https://example.com/"]:
        reply = unchecked.call("handle-url", {"url": other})
        assert reply["handled"] is False and reply.get("session") is None, (other, reply)
    assert client.call("redirect.get", {"session": rid})["status"] == "inProgress"

    # Scheme and host compare case-insensitively: the desktop may hand over MYAPP://STRIPE-REDIRECT.
    delivered = "MYAPP://STRIPE-REDIRECT" + location[len("myapp://stripe-redirect"):]
    assert client.call("handle-url", {"url": delivered}) == {"handled": True, "session": rid}
    # A second delivery of the same URL finds the session completed: not handled.
    again = unchecked.call("handle-url", {"url": location})
    assert again["handled"] is False and again.get("session") is None, again

    completed = events.wait("redirect.completed", rid)["object"]
    assert completed["status"] == "completed" and completed["completion"]["trigger"] == "url"
    assert secret not in completed["completion"]["url"]  # kept, with the client secret masked
    assert completed["completion"]["url"].upper().startswith("MYAPP://STRIPE-REDIRECT/DONE?ORDER=7")

    # The follow-up polls the Source and reports what it found.
    outcome = events.wait("redirect.outcome", rid)["object"]
    assert outcome["status"] == "completed"
    assert outcome["outcome"]["result"] == "chargeable" and outcome["outcome"].get("error") is None
    assert outcome["outcome"]["object"]["id"] == sid and outcome["outcome"]["object"]["status"] == "chargeable"
    assert "client_secret" not in outcome["outcome"]["object"]

    # Events in order, for the session and around the follow-up poll.
    assert events.types_for(rid) == REDIRECT_EVENTS
    seq = {e["type"]: e["seq"] for e in events.seen if e["objectId"] in (rid, sid)}
    assert seq["redirect.completed"] < seq["source.pollStarted"] < seq["source.pollFinished"] < seq["redirect.outcome"]
    finished = events.read_for(sid, "source.pollFinished")
    assert len(finished) == 1
    poll = finished[0]["object"]["poll"]
    assert (poll["status"], poll["sourceStatus"], poll["redirect"], poll["timeout"]) == ("finished", "chargeable", rid, 5)
    assert poll.get("error") is None

    # State as the reads show it; no secret in any event.
    got = client.call("source.get", {"id": sid})
    assert got["status"] == "chargeable" and got["redirect"]["status"] == "succeeded"
    assert got["poll"]["status"] == "finished"
    assert client.call("redirect.get", {"session": rid}) == outcome
    assert [s["id"] for s in client.call("redirect.list")["sessions"]] == [rid]
    assert [s["id"] for s in client.call("source.list")["sources"]] == [sid, default_named["id"], own["id"]]
    for event in events.seen:
        assert "clientSecret" not in event["object"] and "client_secret" not in event["object"].get("source", {})
    assert secret not in daemon.log()


def test_unhandled_url_reply_names_no_session(start_stpd, tmp_path, stripe_test_server):
    """handle-url's result requires `session` (null when nothing matched)."""
    daemon = stpd_for(start_stpd, tmp_path / "stpd", stripe_test_server)
    client = daemon.client()
    assert client.call("handle-url", {"url": "myapp://nothing-waits-for-this"}) == {"handled": False, "session": None}


def test_earliest_started_session_wins(start_stpd, tmp_path, stripe_test_server):
    """Two sessions waiting on the same return URL: the one started first completes, whichever
    Source the incoming URL names (the SDK matches on the return URL only)."""
    daemon = stpd_for(start_stpd, tmp_path / "stpd", stripe_test_server)
    client = daemon.client()
    events = Events(daemon.client(), ["redirect.*"])
    first, _ = create_source(client, sofort("myapp://shared"))
    second, _ = create_source(client, sofort("myapp://shared"))
    a = client.call("redirect.create", {"source": {"id": first["id"]}, "followUpTimeout": 2})
    b = client.call("redirect.create", {"source": {"id": second["id"]}, "followUpTimeout": 2})
    client.call("redirect.start", {"session": b["id"]})  # created second, started first
    client.call("redirect.start", {"session": a["id"]})

    location = bank_page(first["redirect"]["url"], "authorize")  # names the first Source
    assert client.call("handle-url", {"url": location}) == {"handled": True, "session": b["id"]}
    assert client.call("handle-url", {"url": location}) == {"handled": True, "session": a["id"]}
    reported = {events.wait("redirect.outcome")["objectId"], events.wait("redirect.outcome")["objectId"]}
    assert reported == {a["id"], b["id"]}
    results = {s["id"]: s["outcome"]["result"] for s in client.call("redirect.list")["sessions"]}
    # b's Source was never authorized: its follow-up ends at its 2 s timeout, still pending.
    assert results == {a["id"]: "chargeable", b["id"]: "pending"}


# -- 2. failed, canceled, still pending ----------------------------------------------------------

@pytest.mark.parametrize("how, result, redirect_status", [
    ("fail", "failed", "failed"),          # the customer declines at the bank
    ("cancel", "canceled", "failed"),      # the customer aborts at the bank
    ("expire", "canceled", "pending"),     # nobody acts: Stripe cancels the Source
])
def test_redirect_outcome_failed_or_canceled(start_stpd, tmp_path, stripe_test_server, how, result, redirect_status):
    server = stripe_test_server
    daemon = stpd_for(start_stpd, tmp_path / "stpd", server)
    client = daemon.client()
    events = Events(daemon.client(), ["redirect.*", "source.*"])
    source, _ = create_source(client, sofort(RETURN_URL))
    sid = source["id"]
    session = started_session(client, sid, followUpTimeout=5)
    if how == "expire":
        drive_source(server, sid, "expire")
        location = session["returnURL"]  # the app is reopened on its plain return URL
    else:
        location = bank_page(session["openURL"], how)
        assert ("source", sid) in query_items(location)
    assert client.call("handle-url", {"url": location}) == {"handled": True, "session": session["id"]}

    outcome = events.wait("redirect.outcome", session["id"])["object"]["outcome"]
    assert outcome["result"] == result and outcome.get("error") is None, outcome
    assert outcome["object"]["status"] == result
    assert events.types_for(session["id"]) == REDIRECT_EVENTS
    got = client.call("source.get", {"id": sid})
    assert got["status"] == result and got["redirect"]["status"] == redirect_status
    assert (got["poll"]["status"], got["poll"]["sourceStatus"]) == ("finished", result)


def test_follow_up_poll_ends_at_its_timeout_still_pending(start_stpd, tmp_path, stripe_test_server):
    """The app comes back without the customer having done anything at the bank: the follow-up
    poll (--redirect-poll-timeout 1) ends at its timeout with the Source still pending, no error."""
    server = stripe_test_server
    daemon = stpd_for(start_stpd, tmp_path / "stpd", server, "--redirect-poll-timeout", "1")
    client = daemon.client()
    events = Events(daemon.client(), ["redirect.*", "source.*"])
    source, _ = create_source(client, sofort(RETURN_URL))
    sid = source["id"]
    session = started_session(client, sid)
    assert session["followUpTimeout"] == 1
    assert client.call("handle-url", {"url": session["returnURL"] + "&source=" + sid})["handled"] is True

    finished = events.wait("source.pollFinished", sid)["object"]["poll"]
    assert (finished["status"], finished["sourceStatus"], finished["timeout"]) == ("finished", "pending", 1)
    assert finished.get("error") is None and finished["redirect"] == session["id"]
    outcome = events.wait("redirect.outcome", session["id"])["object"]["outcome"]
    assert outcome["result"] == "pending" and outcome.get("error") is None
    # At least two requests went out (the SDK counts a response only after handling it).
    assert len(stpd_source_gets(server, sid)) >= 3  # redirect.create's retrieve, then the poll's


def test_cancelled_session_never_completes(start_stpd, tmp_path, stripe_test_server):
    daemon = stpd_for(start_stpd, tmp_path / "stpd", stripe_test_server)
    client = daemon.client()
    events = Events(daemon.client(), ["redirect.*", "source.*"])
    source, _ = create_source(client, sofort(RETURN_URL))
    session = started_session(client, source["id"])
    rid = session["id"]
    cancelled = client.call("redirect.cancel", {"session": rid})
    assert cancelled["status"] == "cancelled"
    assert events.wait("redirect.cancelled", rid)["object"]["status"] == "cancelled"
    location = bank_page(session["openURL"], "authorize")
    assert client.call("redirect.cancel", {"session": rid})["status"] == "cancelled"  # again: unchanged
    unhandled = daemon.client(checker=None).call("handle-url", {"url": location})
    assert unhandled["handled"] is False
    assert client.call("app.foreground", {}) == {"completedRedirects": [], "polls": []}
    assert client.call("redirect.start", {"session": rid})["status"] == "cancelled"
    quiet_marker(client, events)
    assert events.types_for(rid) == ["redirect.created", "redirect.started", "redirect.cancelled"]
    got = client.call("redirect.get", {"session": rid})
    assert got["status"] == "cancelled" and got.get("completion") is None and got.get("outcome") is None
    assert client.call("source.get", {"id": source["id"]}).get("poll") is None


# -- 3. source.poll on its own -------------------------------------------------------------------

def test_poll_finishes_chargeable(start_stpd, tmp_path, stripe_test_server):
    server = stripe_test_server
    daemon = stpd_for(start_stpd, tmp_path / "stpd", server)
    client = daemon.client()
    events = Events(daemon.client(), ["source.*"])
    source, secret = create_source(client, sofort(RETURN_URL))
    sid = source["id"]

    polling = client.call("source.poll", {"id": sid, "timeout": 60})
    poll = polling["poll"]
    assert (poll["status"], poll["timeout"], poll["retryCount"]) == ("polling", 60, 0)
    assert poll.get("redirect") is None
    assert events.wait("source.pollStarted", sid)["object"]["poll"]["status"] == "polling"
    # The first request goes out at once and sees pending.
    assert events.wait("source.polled", sid)["object"]["poll"]["sourceStatus"] == "pending"

    drive_source(server, sid, "authorize")
    finished = events.wait("source.pollFinished", sid)["object"]
    assert finished["status"] == "chargeable" and finished["redirect"]["status"] == "succeeded"
    assert (finished["poll"]["status"], finished["poll"]["sourceStatus"]) == ("finished", "chargeable")
    assert finished["poll"].get("error") is None
    assert finished["poll"]["deadline"] == poll["deadline"] and finished["poll"]["startedAt"] == poll["startedAt"]
    # Every poll request carried the client secret stpd holds, with the publishable key.
    gets = stpd_source_gets(server, sid)
    assert len(gets) >= 2
    for request in gets:
        assert request["auth"] == "publishable" and ("client_secret", secret) in urllib.parse.parse_qsl(request["query"])
    assert client.call("source.get", {"id": sid})["poll"] == finished["poll"]

    # A Source stpd has not seen yet: source.retrieve remembers it; the timeout is capped at 300 s.
    other = server.api("POST", "/v1/sources", {"type": "sofort", "amount": 500, "currency": "eur",
                                               "redirect": {"return_url": "myapp://x"}, "sofort": {"country": "AT"}},
                       key=server.publishable_key)
    error = rpc_error(client, "source.poll", {"id": other["id"], "clientSecret": other["client_secret"]})
    assert error.code == NOT_FOUND, error
    retrieved = client.call("source.retrieve", {"id": other["id"], "clientSecret": other["client_secret"]})
    assert retrieved["clientSecret"] == other["client_secret"] and retrieved["source"]["status"] == "pending"
    assert events.wait("source.retrieved", other["id"])
    capped = client.call("source.poll", {"id": other["id"], "timeout": 1000})["poll"]
    assert capped["timeout"] == 300
    assert client.call("source.stopPolling", {"id": other["id"]})["poll"]["status"] == "stopped"
    # A changed Source is announced as source.updated on the next retrieve.
    drive_source(server, other["id"], "consume")
    assert client.call("source.retrieve", {"id": other["id"], "clientSecret": other["client_secret"]})["source"]["status"] == "consumed"
    assert events.wait("source.updated", other["id"])["object"]["status"] == "consumed"


def test_poll_ends_with_a_4xx(start_stpd, tmp_path, stripe_test_server):
    server = stripe_test_server
    daemon, client, events, source = with_pending_source(start_stpd, tmp_path / "stpd", server)
    sid = source["id"]
    server.add_fault(method="GET", path=f"/v1/sources/{sid}", status=404, times=1, body={"error": {
        "type": "invalid_request_error", "code": "resource_missing", "param": "id",
        "message": f"No such source: '{sid}'"}})

    client.call("source.poll", {"id": sid, "timeout": 60})
    finished = events.wait("source.pollFinished", sid)["object"]["poll"]
    assert finished["status"] == "finished"
    error = finished["error"]
    assert error["code"] == STRIPE_INVALID_REQUEST, error
    assert error["data"]["http_status"] == 404 and error["data"]["code"] == "resource_missing"
    assert finished.get("sourceStatus") is None  # it never saw the Source
    # A 4xx ends it at once: one request, no retry.
    assert len(stpd_source_gets(server, sid)) == 1
    assert client.call("source.get", {"id": sid})["poll"]["error"]["code"] == STRIPE_INVALID_REQUEST


def test_poll_retries_a_lost_connection_but_ends_on_a_timeout(start_stpd, tmp_path, stripe_test_server):
    """STPSourcePoller retries only -1005 (connection lost) and -1009 (offline); a timeout ends
    the poll with its error."""
    server = stripe_test_server
    daemon = stpd_for(start_stpd, tmp_path / "stpd", server, "--stripe-timeout", "1")
    client = daemon.client()
    events = Events(daemon.client(), ["source.*"])
    lost, _ = create_source(client, sofort(RETURN_URL))
    server.add_fault(method="GET", path=f"/v1/sources/{lost['id']}", drop=True, times=1)
    drive_source(server, lost["id"], "authorize")
    client.call("source.poll", {"id": lost["id"], "timeout": 60})
    finished = events.wait("source.pollFinished", lost["id"])["object"]["poll"]
    assert finished["sourceStatus"] == "chargeable" and finished.get("error") is None, finished
    assert len(stpd_source_gets(server, lost["id"])) == 2

    slow, _ = create_source(client, sofort(RETURN_URL))
    server.add_fault(method="GET", path=f"/v1/sources/{slow['id']}", delayMs=3000, times=1)
    client.call("source.poll", {"id": slow["id"], "timeout": 60})
    finished = events.wait("source.pollFinished", slow["id"])["object"]["poll"]
    # Ended by the first request's timeout, not retried (the server logs that request only once it answers).
    assert finished["error"]["code"] == STRIPE_CONNECTION and finished["retryCount"] == 0, finished


def test_stopped_poll_never_reports(start_stpd, tmp_path, stripe_test_server):
    server = stripe_test_server
    daemon, client, events, source = with_pending_source(start_stpd, tmp_path / "stpd", server)
    sid = source["id"]
    client.call("source.poll", {"id": sid, "timeout": 60})
    events.wait("source.polled", sid)  # its first request is answered; the next is 1.5 s away

    stopped = client.call("source.stopPolling", {"id": sid})
    assert stopped["poll"]["status"] == "stopped"
    assert events.wait("source.pollStopped", sid)["object"]["poll"]["status"] == "stopped"
    requests_at_stop = len(stpd_source_gets(server, sid))
    drive_source(server, sid, "authorize")  # a poll still running would now finish chargeable

    quiet_marker(client, events)
    assert events.read_for(sid, "source.pollFinished") == []
    assert len(stpd_source_gets(server, sid)) == requests_at_stop
    got = client.call("source.get", {"id": sid})
    assert got["poll"]["status"] == "stopped" and got["status"] == "pending"  # as last seen
    # Stopping again is harmless and says nothing.
    assert client.call("source.stopPolling", {"id": sid})["poll"]["status"] == "stopped"
    assert rpc_error(client, "source.stopPolling", {"id": "src_doesNotExist0000"}).code == NOT_FOUND


def test_a_new_poll_replaces_the_running_one(start_stpd, tmp_path, stripe_test_server):
    server = stripe_test_server
    daemon, client, events, source = with_pending_source(start_stpd, tmp_path / "stpd", server)
    sid = source["id"]
    first = client.call("source.poll", {"id": sid, "timeout": 300})["poll"]
    events.wait("source.polled", sid)

    second = client.call("source.poll", {"id": sid, "timeout": 1})["poll"]
    assert second["timeout"] == 1 and second["status"] == "polling"
    assert second["deadline"] != first["deadline"]
    # The replacement ends at its own 1 s timeout, still pending; the 300 s one is gone.
    finished = events.wait("source.pollFinished", sid)["object"]["poll"]
    assert (finished["sourceStatus"], finished["timeout"], finished["startedAt"]) == ("pending", 1, second["startedAt"])
    assert finished.get("error") is None
    assert len(events.read_for(sid, "source.pollStarted")) == 2

    drive_source(server, sid, "authorize")  # the replaced poll, were it alive, would now finish
    requests_after = len(stpd_source_gets(server, sid))
    quiet_marker(client, events)
    assert len(events.read_for(sid, "source.pollFinished")) == 1
    assert len(stpd_source_gets(server, sid)) == requests_after
    assert client.call("source.get", {"id": sid})["poll"]["sourceStatus"] == "pending"


# -- 4. kill -9 ----------------------------------------------------------------------------------

def test_redirect_survives_kill_9(start_stpd, tmp_path, stripe_test_server):
    server = stripe_test_server
    directory = tmp_path / "stpd"
    daemon = stpd_for(start_stpd, directory, server)
    client = daemon.client()
    source, _ = create_source(client, sofort(RETURN_URL))
    session = started_session(client, source["id"], followUpTimeout=5)
    rid = session["id"]
    client.close()

    daemon.kill()  # SIGKILL, in the middle of the redirect
    location = bank_page(session["openURL"], "authorize")  # the customer goes on meanwhile

    restarted = stpd_for(start_stpd, directory, server)
    client = restarted.client()
    events = Events(restarted.client(), ["redirect.*", "source.*"])
    again = client.call("redirect.get", {"session": rid})
    assert again == session  # inProgress, same URLs, same times
    assert client.call("handle-url", {"url": location}) == {"handled": True, "session": rid}
    assert events.wait("redirect.completed", rid)["object"]["completion"]["trigger"] == "url"
    outcome = events.wait("redirect.outcome", rid)["object"]["outcome"]
    assert outcome["result"] == "chargeable"
    assert client.call("source.get", {"id": source["id"]})["status"] == "chargeable"


def test_poll_survives_kill_9_with_its_deadline(start_stpd, tmp_path, stripe_test_server):
    server = stripe_test_server
    directory = tmp_path / "stpd"
    daemon, client, events, source = with_pending_source(start_stpd, directory, server)
    sid = source["id"]
    poll = client.call("source.poll", {"id": sid, "timeout": 60})["poll"]
    events.wait("source.polled", sid)

    daemon.kill()  # SIGKILL, poll running, Source still pending
    restarted = stpd_for(start_stpd, directory, server)
    client = restarted.client()
    events = Events(restarted.client(), ["source.*"])
    resumed = client.call("source.get", {"id": sid})["poll"]
    assert resumed["status"] == "polling"
    assert (resumed["deadline"], resumed["startedAt"], resumed["timeout"]) == (poll["deadline"], poll["startedAt"], 60)

    drive_source(server, sid, "authorize")  # nobody asks stpd anything: the poll resumed by itself
    finished = events.wait("source.pollFinished", sid)["object"]["poll"]
    assert (finished["status"], finished["sourceStatus"]) == ("finished", "chargeable")
    assert finished["deadline"] == poll["deadline"] and finished["startedAt"] == poll["startedAt"]
    got = client.call("source.get", {"id": sid})
    assert got["status"] == "chargeable" and got["poll"]["deadline"] == poll["deadline"]


def test_follow_up_survives_kill_9(start_stpd, tmp_path, stripe_test_server):
    """Killed after the session completed, while its follow-up poll runs: after the restart the
    poll goes on by itself and the outcome still comes."""
    server = stripe_test_server
    directory = tmp_path / "stpd"
    daemon = stpd_for(start_stpd, directory, server)
    client = daemon.client()
    events = Events(daemon.client(), ["redirect.*", "source.*"])
    source, _ = create_source(client, sofort(RETURN_URL))
    sid = source["id"]
    session = started_session(client, sid, followUpTimeout=60)
    rid = session["id"]
    # The app is reopened before the bank has confirmed anything: the Source is still pending.
    assert client.call("handle-url", {"url": session["returnURL"]})["handled"] is True
    events.wait("redirect.completed", rid)
    follow_up = events.wait("source.polled", sid)["object"]["poll"]
    assert (follow_up["redirect"], follow_up["sourceStatus"], follow_up["timeout"]) == (rid, "pending", 60)

    daemon.kill()
    restarted = stpd_for(start_stpd, directory, server)
    client = restarted.client()
    events = Events(restarted.client(), ["redirect.*", "source.*"])
    waiting = client.call("redirect.get", {"session": rid})
    assert waiting["status"] == "completed" and waiting.get("outcome") is None
    assert client.call("source.get", {"id": sid})["poll"]["status"] == "polling"

    drive_source(server, sid, "authorize")  # the bank confirms later
    outcome = events.wait("redirect.outcome", rid)["object"]["outcome"]
    assert outcome["result"] == "chargeable"
    poll = client.call("source.get", {"id": sid})["poll"]
    assert (poll["deadline"], poll["redirect"], poll["status"]) == (follow_up["deadline"], rid, "finished")
    # Reported once.
    assert len(events.read_for(rid, "redirect.outcome")) == 1
    assert restarted.terminate() == 0
    again = stpd_for(start_stpd, directory, server)
    assert again.client().call("redirect.get", {"session": rid})["outcome"]["result"] == "chargeable"


def test_poll_survives_a_clean_restart(start_stpd, tmp_path, stripe_test_server):
    """SIGTERM with a poll running: stpd exits 0 and the poll is still running afterwards, with
    its deadline (shutting down is not the app giving up on it)."""
    server = stripe_test_server
    directory = tmp_path / "stpd"
    daemon, client, events, source = with_pending_source(start_stpd, directory, server)
    sid = source["id"]
    poll = client.call("source.poll", {"id": sid, "timeout": 120})["poll"]
    events.wait("source.polled", sid)
    assert daemon.terminate() == 0

    restarted = stpd_for(start_stpd, directory, server)
    client = restarted.client()
    events = Events(restarted.client(), ["source.*"])
    resumed = client.call("source.get", {"id": sid})["poll"]
    assert (resumed["status"], resumed["deadline"]) == ("polling", poll["deadline"])
    drive_source(server, sid, "consume")
    finished = events.wait("source.pollFinished", sid)["object"]["poll"]
    assert (finished["sourceStatus"], finished["deadline"]) == ("consumed", poll["deadline"])


# -- 5. PaymentIntents ---------------------------------------------------------------------------

def create_ideal_intent(server, amount: int = 2500) -> dict:
    """As the merchant's server does, with the secret key."""
    intent = server.api("POST", "/v1/payment_intents",
                        {"amount": amount, "currency": "eur", "payment_method_types": ["ideal"]})
    assert intent["status"] == "requires_payment_method", intent
    return intent


def test_payment_intent_ideal_redirect_succeeds(start_stpd, tmp_path, stripe_test_server):
    server = stripe_test_server
    daemon = stpd_for(start_stpd, tmp_path / "stpd", server)
    client = daemon.client()
    events = Events(daemon.client(), ["redirect.*"])
    intent = create_ideal_intent(server)
    secret = intent["client_secret"]

    # Before confirming there is nothing to redirect.
    error = rpc_error(client, "redirect.create", {"paymentIntent": {"clientSecret": secret}})
    assert error.code == REDIRECT_UNAVAILABLE and error.data["reason"] == "status", error
    assert error.data["status"] == "requires_payment_method"

    confirmed = client.call("paymentIntent.confirm", {
        "clientSecret": secret, "paymentMethod": {"ideal": {"bank": "ing"}},
        "returnURL": "myshop://stripe-redirect?order=42"})
    pi = confirmed["paymentIntent"]
    assert pi["id"] == intent["id"] and pi["status"] == "requires_action" and "client_secret" not in pi
    assert pi["next_action"]["type"] == "redirect_to_url"
    confirm_calls = server.requests(path=f"/v1/payment_intents/{intent['id']}/confirm")
    assert len(confirm_calls) == 1 and confirm_calls[0]["auth"] == "publishable"
    form = urllib.parse.parse_qs(confirm_calls[0]["body"])
    assert form["payment_method_data[type]"] == ["ideal"] and form["payment_method_data[ideal][bank]"] == ["ing"]
    assert form["return_url"] == ["myshop://stripe-redirect?order=42"]
    assert form["payment_method_data[payment_user_agent]"] == ["stpd/" + client.call("daemon.ping")["version"]]

    session = confirmed["redirect"]
    rid = session["id"]
    assert (session["status"], session["kind"], session["paymentIntentId"]) == ("notStarted", "paymentIntent", intent["id"])
    assert session["returnURL"] == "myshop://stripe-redirect?order=42"
    assert session["redirectURL"] == pi["next_action"]["redirect_to_url"]["url"]
    started = client.call("redirect.start", {"session": rid, "mode": "inApp"})
    assert started["status"] == "inProgress" and started["openURL"] == session["redirectURL"]

    location = bank_page(started["openURL"], "succeed")
    items = dict(query_items(location))
    assert location.startswith("myshop://stripe-redirect?order=42&")
    assert items["payment_intent"] == intent["id"] and items["redirect_status"] == "succeeded"
    assert client.call("handle-url", {"url": location}) == {"handled": True, "session": rid}

    outcome = events.wait("redirect.outcome", rid)["object"]["outcome"]
    assert outcome["result"] == "succeeded" and outcome.get("error") is None
    assert outcome["object"]["id"] == intent["id"] and outcome["object"]["amount_received"] == 2500
    assert "client_secret" not in outcome["object"]
    assert events.types_for(rid) == REDIRECT_EVENTS
    assert client.call("paymentIntent.retrieve", {"clientSecret": secret})["paymentIntent"]["status"] == "succeeded"
    # The secret travels only inside Stripe's redirect URL (which the customer's browser needs).
    for event in events.seen:
        assert secret not in json.dumps(event).replace(session["redirectURL"], ""), event
    # A succeeded PaymentIntent needs no redirect.
    error = rpc_error(client, "redirect.create", {"paymentIntent": {"clientSecret": secret}})
    assert error.code == REDIRECT_UNAVAILABLE and error.data["status"] == "succeeded", error


def test_a_secret_key_confirms_a_payment_intent_without_its_client_secret(start_stpd, tmp_path, stripe_test_server):
    """Stripe takes client_secret on a confirmation from a publishable key only; from a secret key
    it is an unknown parameter. stpd beside a server sends the id in the path alone."""
    server = stripe_test_server
    client = stpd_for(start_stpd, tmp_path / "stpd", server, env={"STPD_STRIPE_KEY": server.secret_key}).client()
    intent = server.api("POST", "/v1/payment_intents", {"amount": 1099, "currency": "eur",
                                                        "payment_method_types": ["card"]})
    confirmed = client.call("paymentIntent.confirm", {"clientSecret": intent["client_secret"],
                                                      "paymentMethod": {"id": "pm_card_visa"}})
    assert confirmed["paymentIntent"]["status"] == "succeeded"
    (call,) = server.requests(path=f"/v1/payment_intents/{intent['id']}/confirm")
    assert call["auth"] == "secret" and call["form"] == {"payment_method": "pm_card_visa", "expand": ["payment_method"]}, call


def test_payment_intent_ideal_redirect_fails(start_stpd, tmp_path, stripe_test_server):
    server = stripe_test_server
    daemon = stpd_for(start_stpd, tmp_path / "stpd", server)
    client = daemon.client()
    events = Events(daemon.client(), ["redirect.*"])
    intent = create_ideal_intent(server)

    # start: the session is started in the same call.
    confirmed = client.call("paymentIntent.confirm", {
        "clientSecret": intent["client_secret"], "paymentMethod": {"ideal": {"bank": "ing"}},
        "returnURL": "myshop://stripe-redirect?order=43", "start": {"mode": "browser"}})
    session = confirmed["redirect"]
    assert (session["status"], session["mode"], session["opener"]) == ("inProgress", "browser", "app")

    location = bank_page(session["openURL"], "fail")
    assert dict(query_items(location))["redirect_status"] == "failed"
    assert client.call("handle-url", {"url": location}) == {"handled": True, "session": session["id"]}
    outcome = events.wait("redirect.outcome", session["id"])["object"]["outcome"]
    assert (outcome["result"], outcome["intentResult"]) == ("requires_payment_method", "failed")
    assert outcome["error"]["code"] == PAYMENT_FAILED
    assert outcome["error"]["data"]["lastPaymentError"]["code"] == "payment_intent_authentication_failure"
    assert outcome["object"]["last_payment_error"]["code"] == "payment_intent_authentication_failure"


# -- 6. app.background / app.foreground -----------------------------------------------------------

def test_background_pauses_and_foreground_resumes_a_poll(start_stpd, tmp_path, stripe_test_server):
    server = stripe_test_server
    daemon, client, events, source = with_pending_source(start_stpd, tmp_path / "stpd", server)
    sid = source["id"]
    poll = client.call("source.poll", {"id": sid, "timeout": 60})["poll"]
    events.wait("source.polled", sid)

    assert client.call("app.background", {}) == {"completedRedirects": [], "polls": [sid]}
    assert events.wait("source.pollPaused", sid)["object"]["poll"]["status"] == "paused"
    requests_at_pause = len(stpd_source_gets(server, sid))
    drive_source(server, sid, "authorize")
    quiet_marker(client, events)  # started after the pause: it polls
    assert events.read_for(sid, "source.pollFinished") == []
    assert len(stpd_source_gets(server, sid)) == requests_at_pause
    assert client.call("source.get", {"id": sid})["poll"]["status"] == "paused"
    assert client.call("app.background", {})["polls"] == []  # nothing running any more

    assert client.call("app.foreground", {}) == {"completedRedirects": [], "polls": [sid]}
    assert events.wait("source.pollResumed", sid)["object"]["poll"]["status"] == "polling"
    finished = events.wait("source.pollFinished", sid)["object"]["poll"]
    assert (finished["sourceStatus"], finished["deadline"]) == ("chargeable", poll["deadline"])
    types = events.types_for(sid)
    assert types.index("source.pollPaused") < types.index("source.pollResumed") < types.index("source.pollFinished")


def test_foreground_completes_browser_and_native_sessions_not_web_automatic_or_in_app(
        start_stpd, tmp_path, stripe_test_server):
    """STPRedirectContext: becoming active completes the external-browser flow and the automatic
    flow on a native app; automatic without one runs the in-app browser flow, which (like inApp)
    completes on the return URL only."""
    server = stripe_test_server
    daemon = stpd_for(start_stpd, tmp_path / "stpd", server)
    client = daemon.client()
    events = Events(daemon.client(), ["redirect.*"])
    auto_source, _ = create_source(client, sofort("myapp://auto"))
    in_app_source, _ = create_source(client, sofort("myapp://inapp"))
    browser_source, _ = create_source(client, sofort("myapp://browser"))
    wechat, _ = create_source(client, {"wechatPay": {"amount": 100, "currency": "cny", "appId": "wxshop"}})
    automatic = started_session(client, auto_source["id"], followUpTimeout=5)
    in_app = started_session(client, in_app_source["id"], mode="inApp", followUpTimeout=5)
    browser = started_session(client, browser_source["id"], mode="browser", followUpTimeout=1)
    native = started_session(client, wechat["id"], followUpTimeout=1)
    not_started = client.call("redirect.create", {"source": {"id": auto_source["id"]}})
    assert (automatic["mode"], in_app["mode"], browser["mode"]) == ("automatic", "inApp", "browser")
    assert automatic["openURL"] == automatic["redirectURL"] and native["openURL"] == native["nativeURL"]

    # The customer is still on the bank page when the app regains focus.
    result = client.call("app.foreground", {})
    assert sorted(result["completedRedirects"]) == sorted([browser["id"], native["id"]]) and result["polls"] == []
    completed = events.wait("redirect.completed", browser["id"])["object"]
    assert completed["completion"]["trigger"] == "foreground" and completed["completion"].get("url") is None
    for session in (automatic, in_app):
        assert client.call("redirect.get", {"session": session["id"]})["status"] == "inProgress"
    assert client.call("redirect.get", {"session": not_started["id"]})["status"] == "notStarted"
    assert client.call("app.foreground", {})["completedRedirects"] == []

    # Those two complete on their return URLs only.
    for session in (automatic, in_app):
        location = bank_page(session["openURL"], "authorize")
        assert client.call("handle-url", {"url": location}) == {"handled": True, "session": session["id"]}
        assert events.wait("redirect.outcome", session["id"])["object"]["outcome"]["result"] == "chargeable"
        assert events.read_for(session["id"], "redirect.completed")[0]["object"]["completion"]["trigger"] == "url"


def test_redirect_report_closed_load_failed_and_native_open_failed(start_stpd, tmp_path, stripe_test_server):
    """The SDK's UI outcomes, reported by the app: the in-app browser closed (a Source's: com.stripe.lib
    80; a PaymentIntent's is re-read first, as STPPaymentHandler does), its first load failed on a
    stripe.com host (40), the native app not opened (fall back; WeChat: STPRedirectContextErrorDomain 0)."""
    server = stripe_test_server
    daemon = stpd_for(start_stpd, tmp_path / "stpd", server)
    client = daemon.client()
    events = Events(daemon.client(), ["redirect.*"])

    # A PaymentIntent's bank page, closed by the customer before paying: re-read, still requiring
    # action, it is canceled (no error: STPPaymentHandler's canceled).
    intent = create_ideal_intent(server)
    confirmed = client.call("paymentIntent.confirm", {
        "clientSecret": intent["client_secret"], "paymentMethod": {"ideal": {"bank": "ing"}},
        "returnURL": "myshop://closed", "start": {"mode": "automatic"}})
    rid = confirmed["redirect"]["id"]
    assert client.call("app.foreground", {})["completedRedirects"] == []
    closed = client.call("redirect.report", {"session": rid, "outcome": "closed", "message": "window closed"})
    assert closed["status"] == "completed" and closed["completion"]["trigger"] == "closed"
    assert closed["completion"].get("error") is None
    outcome = events.wait("redirect.outcome", rid)["object"]["outcome"]
    assert (outcome["result"], outcome["intentResult"], outcome.get("error")) == ("requires_action", "canceled", None)
    # The return URL arriving afterwards completes nothing; a second report changes nothing.
    assert client.call("handle-url", {"url": "myshop://closed?payment_intent=x"})["handled"] is False
    assert client.call("redirect.report", {"session": rid, "outcome": "closed"}) == \
        client.call("redirect.get", {"session": rid})

    # Paid, then closed without coming back: the re-read finds it succeeded.
    paid = create_ideal_intent(server)
    confirmed = client.call("paymentIntent.confirm", {
        "clientSecret": paid["client_secret"], "paymentMethod": {"ideal": {}},
        "returnURL": "myshop://paid", "start": {"mode": "inApp"}})
    server.api("POST", f"/_test/payment_intents/{paid['id']}/succeed")
    rid = confirmed["redirect"]["id"]
    client.call("redirect.report", {"session": rid, "outcome": "closed"})
    outcome = events.wait("redirect.outcome", rid)["object"]["outcome"]
    assert (outcome["result"], outcome["intentResult"]) == ("succeeded", "succeeded")

    # A Source's page closed: the SDK's cancellation error.
    source, _ = create_source(client, sofort("myapp://closed"))
    session = started_session(client, source["id"], mode="inApp")
    closed = client.call("redirect.report", {"session": session["id"], "outcome": "closed", "message": "window closed"})
    error = closed["completion"]["error"]
    assert error["code"] == REDIRECT_CANCELLED, error
    assert (error["data"]["sdkDomain"], error["data"]["sdkCode"], error["data"]["message"]) == \
        ("com.stripe.lib", 80, "window closed")
    assert closed["outcome"]["result"] == "error" and closed["outcome"]["error"] == error

    # A first load that failed: ignored unless the page is Stripe's. Stripe's hook page redirects
    # at once to the bank's, so the report names the page that failed.
    source, _ = create_source(client, sofort("myapp://load"))
    session = started_session(client, source["id"], mode="inApp")
    error = rpc_error(client, "redirect.report", {"session": session["id"], "outcome": "loadFailed"})
    assert error.code == INVALID_PARAMS and error.data["parameter"] == "url", error
    still = client.call("redirect.report", {"session": session["id"], "outcome": "loadFailed",
                                            "url": "https://bank.example/login"})
    assert still["status"] == "inProgress"
    failed = client.call("redirect.report", {"session": session["id"], "outcome": "loadFailed",
                                             "url": "https://hooks.stripe.com/redirect/authenticate/src_x"})
    assert failed["completion"]["error"]["code"] == REDIRECT_LOAD_FAILED
    assert failed["completion"]["error"]["data"]["sdkCode"] == 40

    # Closing is not an event of the external browser.
    browser_source, _ = create_source(client, sofort("myapp://browser"))
    browser = started_session(client, browser_source["id"], mode="browser")
    error = rpc_error(client, "redirect.report", {"session": browser["id"], "outcome": "closed"})
    assert error.code == INVALID_STATE, error

    # WeChat Pay whose app cannot be opened.
    wechat, _ = create_source(client, {"wechatPay": {"amount": 100, "currency": "cny", "appId": "wxshop"}})
    native = started_session(client, wechat["id"])
    done = client.call("redirect.report", {"session": native["id"], "outcome": "nativeOpenFailed"})
    assert done["status"] == "completed" and done["completion"]["error"]["code"] == REDIRECT_OPEN_FAILED
    assert done["completion"]["error"]["data"]["sdkDomain"] == "STPRedirectContextErrorDomain"


def test_urls_that_did_not_parse_before_ios_17_open_no_session(start_stpd, tmp_path, stripe_test_server):
    """A difference: a URL must parse as URL(string:) parsed it before iOS 17. Since iOS 17 (and in
    Swift 6) it percent-encodes `not a url` into a URL, which the SDK would open. stpd refuses such a
    returnURL before sending anything."""
    server = stripe_test_server
    daemon = stpd_for(start_stpd, tmp_path / "stpd", server)
    client = daemon.client()
    intent = create_ideal_intent(server)
    error = rpc_error(client, "paymentIntent.confirm", {
        "clientSecret": intent["client_secret"], "paymentMethod": {"ideal": {"bank": "ing"}},
        "returnURL": "not a url"})
    assert error.code == INVALID_PARAMS and error.data["parameter"] == "returnURL", error
    assert server.requests(path=f"/v1/payment_intents/{intent['id']}/confirm") == []
    # Confirmed by the merchant's server with such a URL: no session, and handling it needs a returnURL.
    server.api("POST", f"/v1/payment_intents/{intent['id']}/confirm",
               {"payment_method_data": {"type": "ideal"}, "return_url": "not a url"})
    error = rpc_error(client, "redirect.create", {"paymentIntent": {"clientSecret": intent["client_secret"]}})
    assert error.code == REDIRECT_UNAVAILABLE, error
    handled = client.call("paymentIntent.handleNextAction", {"clientSecret": intent["client_secret"]})
    assert handled["result"] == "failed" and handled["error"]["code"] == RETURN_URL_REQUIRED, handled
    # A Source constructor's return URL is refused the same way, before anything reaches Stripe.
    error = rpc_error(client, "source.create", {"params": sofort("not a url")})
    assert error.code == INVALID_PARAMS and error.data["parameter"] == "params.returnURL", error
    assert server.requests(path="/v1/sources") == []


# Serial: the calling app is this process, which is `python -m pytest` only outside an xdist worker.
@pytest.mark.serial
def test_merchant_name_defaults_to_the_calling_apps_name_never_its_interpreters(start_stpd, tmp_path,
                                                                                stripe_test_server):
    """The SDK names the merchant by the app's display name; stpd's default is the calling app's name
    as a customer would know it. This test runs in `python -m pytest`: its app is pytest, not python."""
    server = stripe_test_server
    daemon = stpd_for(start_stpd, tmp_path / "stpd", server)
    argv = Path("/proc/self/cmdline").read_bytes().split(b"\0")
    assert Path(argv[0].decode()).name.startswith("python") and argv[1:3] == [b"-m", b"pytest"], argv
    source, _ = create_source(daemon.client(), sofort("myapp://named"))
    assert [v for k, v in query_items(source["redirect"]["returnURL"]) if k == "redirect_merchant_name"] \
        == ["pytest"]


# -- 7. errors and another uid --------------------------------------------------------------------

def test_errors(start_stpd, tmp_path, stripe_test_server):
    server = stripe_test_server
    daemon = stpd_for(start_stpd, tmp_path / "stpd", server)
    client = daemon.client()

    # A card Source needs no redirect.
    card, _ = create_source(client, {"card": {"number": "4242424242424242", "expMonth": 12, "expYear": 2040, "cvc": "123"}})
    assert (card["type"], card["flow"], card["status"], card["isReusable"]) == ("card", "none", "chargeable", True)
    assert "4242424242424242" not in json.dumps(card)
    error = rpc_error(client, "redirect.create", {"source": {"id": card["id"]}})
    assert error.code == REDIRECT_UNAVAILABLE, error
    assert (error.data["reason"], error.data["flow"], error.data["type"]) == ("flow", "none", "card")

    # A redirect Source that is no longer pending.
    failed, _ = create_source(client, sofort(RETURN_URL))
    drive_source(server, failed["id"], "fail")
    error = rpc_error(client, "redirect.create", {"source": {"id": failed["id"]}})
    assert error.code == REDIRECT_UNAVAILABLE, error
    assert (error.data["reason"], error.data["status"]) == ("status", "failed")
    assert client.call("source.get", {"id": failed["id"]})["status"] == "failed"  # redirect.create fetched it

    # Malformed URLs are invalid params; unknown sessions and Sources are NotFound.
    for bad in ["not a url", "::", ""]:
        error = rpc_error(client, "handle-url", {"url": bad})
        assert error.code == INVALID_PARAMS, (bad, error)
    assert rpc_error(client, "handle-url", {}).code == INVALID_PARAMS
    assert rpc_error(client, "redirect.get", {"session": "rdr_000000000000000000000000"}).code == NOT_FOUND
    assert rpc_error(client, "source.get", {"id": "src_doesNotExist0000"}).code == NOT_FOUND
    assert rpc_error(client, "redirect.create", {}).code == INVALID_PARAMS
    error = rpc_error(client, "source.create", {"params": sofort(RETURN_URL) | {"ideal": {"amount": 1, "returnURL": RETURN_URL}}})
    assert error.code == INVALID_PARAMS, error

    # opener daemon without STPD_URL_OPENER: Disabled, and the session does not start.
    pending, _ = create_source(client, sofort(RETURN_URL))
    session = client.call("redirect.create", {"source": {"id": pending["id"]}})
    error = rpc_error(client, "redirect.start", {"session": session["id"], "opener": "daemon"})
    assert error.code == DISABLED and error.data["setting"] == "STPD_URL_OPENER", error
    assert client.call("redirect.get", {"session": session["id"]})["status"] == "notStarted"


def test_another_uid_cannot_see_sessions_or_sources(start_stpd, tmp_path, stripe_test_server):
    if os.geteuid() != 0:
        pytest.skip("needs root to run a client as another uid (setuid)")
    python = shutil.which("python3", path="/usr/bin:/bin:/usr/local/bin")
    if python is None:
        pytest.skip("no system python3 that another uid can run")
    other_uid = 65534  # nobody
    server = stripe_test_server
    socket_dir = Path(tempfile.mkdtemp(prefix="stpd-uid-"))
    try:
        socket_dir.chmod(0o755)
        socket_path = socket_dir / "stpd.sock"
        daemon = stpd_for(start_stpd, tmp_path / "stpd", server, "--socket", str(socket_path), "--socket-mode", "0666")
        client = daemon.client()
        source, secret = create_source(client, sofort(RETURN_URL))
        sid = source["id"]
        session = started_session(client, sid, followUpTimeout=2)
        rid = session["id"]
        location = bank_page(session["openURL"], "authorize")

        calls = [
            ["redirect.get", {"session": rid}],
            ["redirect.start", {"session": rid}],
            ["redirect.cancel", {"session": rid}],
            ["source.get", {"id": sid}],
            ["source.poll", {"id": sid, "timeout": 1}],
            ["source.stopPolling", {"id": sid}],
            ["redirect.create", {"source": {"id": sid}}],
            ["source.retrieve", {"id": sid, "clientSecret": secret}],
            ["redirect.list", {}],
            ["source.list", {}],
            ["handle-url", {"url": location}],
            ["app.foreground", {}],
            ["app.background", {}],
            ["events.wait", {"since": 0, "filter": {"types": ["redirect.*", "source.*"]}, "timeout": 0}],
        ]
        replies = run_as(python, other_uid, socket_path, calls)
        for reply, (method, _) in zip(replies[:6], calls[:6]):
            assert reply.get("error", {}).get("code") == NOT_FOUND, (method, reply)
        # Without the secret, nothing; with it, the Source is still someone else's, and answers
        # as an id that does not exist.
        assert replies[6]["error"]["code"] == INVALID_PARAMS, replies[6]
        assert replies[7]["error"]["code"] == STRIPE_INVALID_REQUEST, replies[7]
        assert replies[7]["error"]["data"]["code"] == "resource_missing", replies[7]
        assert replies[8]["result"]["sessions"] == [] and replies[9]["result"]["sources"] == []
        assert replies[10]["result"]["handled"] is False and replies[10]["result"].get("session") is None
        assert replies[11]["result"] == {"completedRedirects": [], "polls": []}
        assert replies[12]["result"] == {"completedRedirects": [], "polls": []}
        assert replies[13]["result"]["events"] == []
        assert secret not in json.dumps(replies)

        # Nothing the other uid did touched the session; its owner completes it.
        assert client.call("redirect.get", {"session": rid}) == session
        events = Events(daemon.client(), ["redirect.*"])
        assert client.call("handle-url", {"url": location}) == {"handled": True, "session": rid}
        assert events.wait("redirect.outcome", rid)["object"]["outcome"]["result"] == "chargeable"
    finally:
        shutil.rmtree(socket_dir, ignore_errors=True)


# -- 8. --url-opener -----------------------------------------------------------------------------

def test_url_opener_runs_a_command(start_stpd, tmp_path, stripe_test_server):
    server = stripe_test_server
    opened = tmp_path / "opened.txt"
    exit_status = tmp_path / "opener-exit-status"
    opener = tmp_path / "opener.sh"
    opener.write_text("#!/bin/sh\n"
                      f"printf '%s %s\\n' \"$#\" \"$1\" >> '{opened}'\n"
                      f"exit \"$(cat '{exit_status}' 2>/dev/null || echo 0)\"\n")
    opener.chmod(0o755)
    assert " " not in str(opener)  # STPD_URL_OPENER splits on spaces
    daemon = stpd_for(start_stpd, tmp_path / "stpd", server, "--url-opener", str(opener))
    client = daemon.client()
    events = Events(daemon.client(), ["redirect.*"])

    source, _ = create_source(client, sofort(RETURN_URL))
    session = client.call("redirect.create", {"source": {"id": source["id"]}, "followUpTimeout": 5})
    started = client.call("redirect.start", {"session": session["id"], "opener": "daemon"})
    assert (started["status"], started["opener"]) == ("inProgress", "daemon")
    # The command ran, and was done, before the reply: one argument, the URL to open.
    assert opened.read_text() == f"1 {started['openURL']}\n"
    assert started["openURL"] == source["redirect"]["url"]
    # The customer follows it; the session completes as any other.
    location = bank_page(started["openURL"], "authorize")
    assert client.call("handle-url", {"url": location})["handled"] is True
    assert events.wait("redirect.outcome", session["id"])["object"]["outcome"]["result"] == "chargeable"
    # A page stpd opened is in the desktop's browser, the SDK's external-browser flow whatever the
    # mode: the app's next app.foreground completes it, and it takes no report of a page.
    third, _ = create_source(client, sofort("myapp://third"))
    page = client.call("redirect.create", {"source": {"id": third["id"]}, "followUpTimeout": 5})
    client.call("redirect.start", {"session": page["id"], "mode": "inApp", "opener": "daemon"})
    error = rpc_error(client, "redirect.report", {"session": page["id"], "outcome": "closed"})
    assert error.code == INVALID_STATE, error
    assert client.call("app.foreground", {})["completedRedirects"] == [page["id"]]
    assert events.wait("redirect.completed", page["id"])["object"]["completion"]["trigger"] == "foreground"

    # A failing opener: RedirectOpenFailed, and the session stays notStarted.
    exit_status.write_text("3\n")
    other, _ = create_source(client, sofort("myapp://second"))
    second = client.call("redirect.create", {"source": {"id": other["id"]}})
    error = rpc_error(client, "redirect.start", {"session": second["id"], "opener": "daemon"})
    assert error.code == REDIRECT_OPEN_FAILED, error
    other_secret = urllib.parse.parse_qs(urllib.parse.urlsplit(other["redirect"]["url"]).query)["client_secret"][0]
    assert other_secret not in json.dumps(error.data) and other_secret not in error.message, error
    assert client.call("redirect.get", {"session": second["id"]})["status"] == "notStarted"
    assert opened.read_text().splitlines()[-1] == f"1 {other['redirect']['url']}"
    # opener app (the default) never runs the command.
    exit_status.write_text("0\n")
    lines = len(opened.read_text().splitlines())
    assert client.call("redirect.start", {"session": second["id"]})["opener"] == "app"
    assert len(opened.read_text().splitlines()) == lines


def test_finished_objects_are_removed_after_the_retention_age(start_stpd, tmp_path, stripe_test_server):
    """A Source nobody polls and a redirect session never started are finished; once older than
    STPD_EVENT_MAX_AGE (1 s here) the next start removes them, with a `.removed` event each. A
    running poll's Source is kept whatever its age."""
    import time

    server = stripe_test_server
    directory = tmp_path / "stpd"
    daemon = stpd_for(start_stpd, directory, server, "--event-max-age", "1")
    client = daemon.client()
    idle, _ = create_source(client, sofort(RETURN_URL))
    session = client.call("redirect.create", {"source": {"id": idle["id"]}})
    polled, _ = create_source(client, sofort(RETURN_URL))
    client.call("source.poll", {"id": polled["id"], "timeout": 120})
    assert daemon.terminate() == 0
    time.sleep(1.5)  # past the retention age: nothing else can make an object old

    restarted = stpd_for(start_stpd, directory, server, "--event-max-age", "1")
    client = restarted.client()
    assert rpc_error(client, "source.get", {"id": idle["id"]}).code == NOT_FOUND
    assert rpc_error(client, "redirect.get", {"session": session["id"]}).code == NOT_FOUND
    assert client.call("source.get", {"id": polled["id"]})["poll"]["status"] == "polling"
    since = client.call("daemon.status")["store"]["oldestSeq"] - 1  # the rest was pruned at start
    removed = client.call("events.wait", {"since": since, "timeout": 0,
                                          "filter": {"types": ["source.removed", "redirect.removed"]}})
    assert {(e["type"], e["objectId"]) for e in removed["events"]} == {
        ("source.removed", idle["id"]), ("redirect.removed", session["id"])}
    client.call("source.stopPolling", {"id": polled["id"]})
