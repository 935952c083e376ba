"""Issue 32.3: polls were bounded per uid in neither count nor pace (1,000 polls of one uid sent
938 Stripe requests/s on the account's one key). A uid runs at most STPD_MAX_POLLS_PER_UID polls
(intent and Source together); one more gets TooManyPolls naming the setting, another uid keeps
its own budget, and stopping a poll makes room. The pace (a token bucket per uid) is checked in
PollBudgetTests without a clock; the daemon's own figures are in the bench's `polls` case."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from flows import create_source, rpc_error, run_as, sofort, stpd_for
from stpd import errors
from test_security import OTHER_UID, system_python

TOO_MANY_POLLS = errors.TooManyPolls.code
RETURN_URL = "myapp://stripe-redirect/done"


@pytest.fixture
def daemon(start_stpd, stripe_test_server):
    directory = Path(tempfile.mkdtemp(prefix="stpd-polls-"))
    directory.chmod(0o755)
    try:
        yield stpd_for(start_stpd, directory, stripe_test_server, "--socket-mode", "0666",
                       "--max-polls-per-uid", "2")
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def test_a_uid_runs_a_bounded_number_of_polls(daemon):
    python = system_python()
    with daemon.client() as client:
        sources = [create_source(client, sofort(RETURN_URL))[0]["id"] for _ in range(3)]
        for source in sources[:2]:
            assert client.call("source.poll", {"id": source, "timeout": 120})["poll"]["status"] == "polling"
        error = rpc_error(client, "source.poll", {"id": sources[2], "timeout": 120})
        assert error.code == TOO_MANY_POLLS, error
        assert error.data == {"scope": "user", "limit": 2, "setting": "STPD_MAX_POLLS_PER_UID"}, error.data
        # Polling one of them again replaces its poll: not one more.
        assert client.call("source.poll", {"id": sources[0], "timeout": 120})["poll"]["status"] == "polling"

        # Another uid's polls are its own.
        created = run_as(python, OTHER_UID, daemon.socket_path,
                         [["source.create", {"params": sofort(RETURN_URL)}]])[0]["result"]["source"]["id"]
        (polled,) = run_as(python, OTHER_UID, daemon.socket_path, [["source.poll", {"id": created, "timeout": 120}]])
        assert polled["result"]["poll"]["status"] == "polling", polled

        # Stopping one makes room.
        client.call("source.stopPolling", {"id": sources[0]})
        assert client.call("source.poll", {"id": sources[2], "timeout": 120})["poll"]["status"] == "polling"
        for source in sources[1:]:
            client.call("source.stopPolling", {"id": source})
