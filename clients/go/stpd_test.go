package stpd

// The Go client against a real stpd: STPD_SOCKET=... go test ./...
// Tests/e2e/test_clients_node_go.py starts that stpd (--debug-methods, --max-outbound-bytes 65536)
// and runs these; without STPD_SOCKET only the tests that need no daemon run.

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

func daemon(t *testing.T) (*Client, string) {
	t.Helper()
	path := os.Getenv("STPD_SOCKET")
	if path == "" {
		t.Skip("STPD_SOCKET names no stpd (started with --debug-methods) to test against")
	}
	client, err := Dial(path)
	if err != nil {
		t.Fatalf("dial %s: %v", path, err)
	}
	t.Cleanup(func() { client.Close() })
	return client, path
}

func timeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func latestSeq(t *testing.T, ctx context.Context, client *Client) int64 {
	t.Helper()
	var status struct {
		Store struct {
			LatestSeq int64 `json:"latestSeq"`
		} `json:"store"`
	}
	if err := client.Call(ctx, "daemon.status", nil, &status); err != nil {
		t.Fatal(err)
	}
	return status.Store.LatestSeq
}

func TestDefaultSocketPathFollowsStpctl(t *testing.T) {
	env := func(values map[string]string) func(string) string {
		return func(key string) string { return values[key] }
	}
	yes := func(string) bool { return true }
	no := func(string) bool { return false }
	cases := []struct {
		env    map[string]string
		uid    int
		exists func(string) bool
		want   string
	}{
		{map[string]string{"STPD_SOCKET": "/x.sock", "XDG_RUNTIME_DIR": "/r"}, 1000, yes, "/x.sock"},
		{map[string]string{"XDG_RUNTIME_DIR": "/r"}, 0, yes, SystemSocket},
		{map[string]string{"XDG_RUNTIME_DIR": "/r"}, 1000, yes, "/r/stpd.sock"},
		{map[string]string{"XDG_RUNTIME_DIR": "/r"}, 1000, no, SystemSocket},
		{map[string]string{}, 1000, yes, SystemSocket},
	}
	for _, c := range cases {
		if got := defaultSocketPath(env(c.env), c.uid, c.exists); got != c.want {
			t.Errorf("defaultSocketPath(%v, uid %d) = %q, want %q", c.env, c.uid, got, c.want)
		}
	}
}

func TestPing(t *testing.T) {
	client, _ := daemon(t)
	pong, err := client.Ping(timeout(t))
	if err != nil || !pong.Pong || pong.Version == "" {
		t.Fatalf("Ping = %+v, %v", pong, err)
	}
}

func TestPipelinedCallsAreAnsweredOutOfOrder(t *testing.T) {
	client, _ := daemon(t)
	ctx := timeout(t)
	since := latestSeq(t, ctx, client)
	// events.wait goes out first, and the daemon holds its reply until an event comes; the pings
	// sent after it on the same connection are all answered meanwhile.
	_, waiting, err := client.send("events.wait", map[string]any{"since": since, "timeout": 30})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := client.Ping(ctx); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	select {
	case r := <-waiting:
		t.Fatalf("events.wait was answered before the pings sent after it: %s %v", r.result, r.err)
	default:
	}
	if err := client.Call(ctx, "debug.emit", map[string]any{"count": 1}, nil); err != nil {
		t.Fatal(err)
	}
	r := <-waiting
	var waited struct {
		Events []json.RawMessage `json:"events"`
		Next   int64             `json:"next"`
	}
	if r.err != nil || json.Unmarshal(r.result, &waited) != nil || len(waited.Events) != 1 || waited.Next != since+1 {
		t.Fatalf("events.wait = %s, %v", r.result, r.err)
	}
	// Concurrent debug.emit calls: each result spans its own count, so no reply went to another call.
	errs := make(chan error, 10)
	for n := 1; n <= 10; n++ {
		wg.Add(1)
		go func(n int) {
			defer wg.Done()
			var emitted struct{ FirstSeq, LastSeq int64 }
			if err := client.Call(ctx, "debug.emit", map[string]any{"count": n}, &emitted); err != nil {
				errs <- err
			} else if emitted.LastSeq-emitted.FirstSeq != int64(n-1) {
				errs <- errors.New("a reply went to another call")
			}
		}(n)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestErrorRepliesAreTyped(t *testing.T) {
	client, _ := daemon(t)
	ctx := timeout(t)
	err := client.Call(ctx, "events.unsubscribe", map[string]string{"subscription": "sub_none"}, nil)
	var rpcErr *Error
	if !errors.As(err, &rpcErr) || !errors.Is(err, ErrSubscriptionNotFound) || errors.Is(err, ErrNotFound) {
		t.Fatalf("events.unsubscribe of nothing = %v", err)
	}
	if rpcErr.Code != CodeSubscriptionNotFound || rpcErr.Name() != "SubscriptionNotFound" || rpcErr.Message == "" {
		t.Fatalf("error = %+v", rpcErr)
	}
	err = client.Call(ctx, "events.wait", map[string]string{"since": "zero"}, nil)
	if !errors.As(err, &rpcErr) || !errors.Is(err, ErrInvalidParams) {
		t.Fatalf("events.wait with a string since = %v", err)
	}
	var data struct{ Parameter string }
	if json.Unmarshal(rpcErr.Data, &data) != nil || data.Parameter != "since" {
		t.Fatalf("data = %s", rpcErr.Data)
	}
	if err := client.Call(ctx, "no.such.method", nil, nil); !errors.Is(err, ErrMethodNotFound) {
		t.Fatalf("no.such.method = %v", err)
	}
	if _, err := client.Ping(ctx); err != nil {
		t.Fatalf("the connection broke after error replies: %v", err)
	}
}

func TestHandleURL(t *testing.T) {
	client, _ := daemon(t)
	ctx := timeout(t)
	result, err := client.HandleURL(ctx, "myshop://stripe-redirect?order=1")
	if err != nil || result.Handled || result.Session != nil {
		t.Fatalf("HandleURL = %+v, %v", result, err)
	}
	if _, err := client.HandleURL(ctx, "not a url"); !errors.Is(err, ErrInvalidParams) {
		t.Fatalf("HandleURL of a malformed URL = %v", err)
	}
}

func TestSubscriptionReplaysThenFollows(t *testing.T) {
	client, path := daemon(t)
	ctx := timeout(t)
	start := latestSeq(t, ctx, client)
	emit := func(count int, object string) {
		if err := client.Call(ctx, "debug.emit", map[string]any{"count": count, "objectId": object}, nil); err != nil {
			t.Fatal(err)
		}
	}
	emit(3, "dbg_go_replay")
	filter := &Filter{Objects: []string{"dbg_go_replay"}}
	events, err := Subscribe(ctx, path, SubscribeOptions{Since: &start, Filter: filter})
	if err != nil {
		t.Fatal(err)
	}
	defer events.Close()
	emit(2, "dbg_go_replay")
	emit(2, "dbg_go_other") // filtered out
	for want := start + 1; want <= start+5; want++ {
		event, err := events.Next(ctx)
		if err != nil || event.Seq != want || event.ObjectID != "dbg_go_replay" || event.Type != "debug.test" {
			t.Fatalf("event %d: %+v, %v", want, event, err)
		}
	}
}

func TestSlowSubscriptionIsDroppedAndResumesWithoutLoss(t *testing.T) {
	client, path := daemon(t)
	ctx := timeout(t)
	subscriptions := func() int {
		var status struct{ Subscriptions int }
		if err := client.Call(ctx, "daemon.status", nil, &status); err != nil {
			t.Fatal(err)
		}
		return status.Subscriptions
	}
	// The earlier tests' subscriptions are gone (the daemon notices a close asynchronously).
	for tries := 0; subscriptions() != 0; tries++ {
		if tries == 200 {
			t.Fatal("subscriptions of earlier tests are still open")
		}
		time.Sleep(50 * time.Millisecond)
	}
	start := latestSeq(t, ctx, client)
	events, err := Subscribe(ctx, path, SubscribeOptions{Since: &start})
	if err != nil {
		t.Fatal(err)
	}
	defer events.Close()
	// Batches of ~42 KB while nothing is taken, until the daemon drops the subscription (past the
	// channel, the socket buffers and the 64 KiB budget); read at once after that, since the
	// daemon closes a dropped connection left unread for 30 s without flushing it.
	blob := strings.Repeat("x", 4000)
	last := start
	for subscriptions() != 0 {
		if last-start >= 1000 {
			t.Fatal("the daemon never dropped the stalled subscription")
		}
		var emitted struct{ LastSeq int64 }
		params := map[string]any{"count": 10, "objectId": "dbg_go_flood", "payload": map[string]string{"blob": blob}}
		if err := client.Call(ctx, "debug.emit", params, &emitted); err != nil {
			t.Fatal(err)
		}
		last = emitted.LastSeq
	}
	for want := start + 1; want <= last; want++ {
		event, err := events.Next(ctx)
		if err != nil || event.Seq != want {
			t.Fatalf("want seq %d: %+v, %v", want, event.Seq, err)
		}
	}
	if events.Drops != 1 || events.Reconnects != 1 {
		t.Fatalf("drops %d, reconnects %d: want 1 and 1", events.Drops, events.Reconnects)
	}
	if err := client.Call(ctx, "debug.emit", map[string]any{"count": 1}, nil); err != nil {
		t.Fatal(err)
	}
	if event, err := events.Next(ctx); err != nil || event.Seq != last+1 {
		t.Fatalf("after the resume: %+v, %v", event, err)
	}
}

func TestClosedClientFailsCalls(t *testing.T) {
	client, _ := daemon(t)
	client.Close()
	if err := client.Call(timeout(t), "daemon.ping", nil, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("a call on a closed client = %v", err)
	}
}
