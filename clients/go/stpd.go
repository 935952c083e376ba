// Package stpd is a client for stpd, the Stripe payments daemon: JSON-RPC 2.0 over its Unix socket,
// with Go's standard library only.
//
//	client, err := stpd.Dial(stpd.DefaultSocketPath())
//	var pong stpd.Pong
//	err = client.Call(ctx, "daemon.ping", nil, &pong)
//	err = client.Call(ctx, "source.get", map[string]any{"id": "src_x"}, nil)
//	errors.Is(err, stpd.ErrNotFound) // one sentinel per error code of the contract (errors.go)
//
// Framing: one JSON text per line, both ways; the newline ends a frame. Lines are read with
// bufio.Reader.ReadBytes, which has no length limit (bufio.Scanner's default 64 KiB token is too
// small for stpd's replies). net/rpc/jsonrpc speaks JSON-RPC 1.0 and cannot talk to stpd.
//
// Calls may be made from many goroutines at once on one Client: requests are pipelined and each
// reply is matched to its call by id, whatever order the daemon answers in.
package stpd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
)

// SystemSocket is the system instance's socket (systemd/stpd.socket).
const SystemSocket = "/run/stpd/stpd.sock"

// DefaultSocketPath is where stpctl looks: $STPD_SOCKET; as root the system socket; else
// $XDG_RUNTIME_DIR/stpd.sock when it exists; else the system socket.
func DefaultSocketPath() string {
	return defaultSocketPath(os.Getenv, os.Getuid(), func(path string) bool {
		_, err := os.Stat(path)
		return err == nil
	})
}

func defaultSocketPath(getenv func(string) string, uid int, exists func(string) bool) string {
	if path := getenv("STPD_SOCKET"); path != "" {
		return path
	}
	if uid == 0 {
		return SystemSocket
	}
	if runtime := getenv("XDG_RUNTIME_DIR"); runtime != "" && exists(filepath.Join(runtime, "stpd.sock")) {
		return filepath.Join(runtime, "stpd.sock")
	}
	return SystemSocket
}

// Error is an error reply: its code, message and data as the daemon sent them. errors.Is matches
// it against the sentinel of its code (ErrNotFound...), which errors.go declares for every code.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string {
	if name := codeName(e.Code); name != "" {
		return fmt.Sprintf("stpd: %s (%d): %s", name, e.Code, e.Message)
	}
	return fmt.Sprintf("stpd: error %d: %s", e.Code, e.Message)
}

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Name is the contract's name of the code ("NotFound"), or "" for a code it does not list.
func (e *Error) Name() string { return codeName(e.Code) }

// ErrClosed is returned for calls on a connection that is closed or broke.
var ErrClosed = errors.New("stpd: connection closed")

// Notification is a message from the daemon that answers no request (an event, events.dropped).
type Notification struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

type reply struct {
	result json.RawMessage
	err    error
}

// Client is one connection to stpd.
type Client struct {
	conn    net.Conn
	writeMu sync.Mutex

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan reply
	err     error // why the connection ended, once it has

	notifications chan Notification
	done          chan struct{}
}

// Dial connects to the socket at path.
func Dial(path string) (*Client, error) {
	conn, err := net.Dial("unix", path)
	if err != nil {
		return nil, err
	}
	c := &Client{
		conn:          conn,
		pending:       make(map[int64]chan reply),
		notifications: make(chan Notification, 64),
		done:          make(chan struct{}),
	}
	go c.readLoop()
	return c, nil
}

// Notifications delivers the daemon's notifications in order. Once 64 wait unread the client
// stops reading the socket (replies wait too): read them when subscribing on this connection,
// or use Subscribe, which has a connection of its own.
func (c *Client) Notifications() <-chan Notification { return c.notifications }

// Done is closed when the connection has ended; Err then says why.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err is why the connection ended (ErrClosed after Close), or nil while it is open.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close closes the connection; calls waiting on it return ErrClosed.
func (c *Client) Close() error {
	c.fail(ErrClosed)
	return c.conn.Close()
}

// Call sends a request and waits for its reply. params is anything encoding/json marshals to an
// object (nil: none); the result is unmarshalled into result unless it is nil. An error reply is
// returned as an *Error. Cancelling ctx stops the wait, not the request.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	id, ch, err := c.send(method, params)
	if err != nil {
		return err
	}
	select {
	case r := <-ch:
		if r.err != nil {
			return r.err
		}
		if result != nil {
			return json.Unmarshal(r.result, result)
		}
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return ctx.Err()
	}
}

func (c *Client) send(method string, params any) (int64, chan reply, error) {
	request := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		request["params"] = params
	}
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return 0, nil, err
	}
	c.nextID++
	id := c.nextID
	ch := make(chan reply, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	request["id"] = id
	frame, err := json.Marshal(request)
	if err != nil {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return 0, nil, err
	}
	c.writeMu.Lock()
	_, err = c.conn.Write(append(frame, '\n'))
	c.writeMu.Unlock()
	if err != nil {
		c.fail(fmt.Errorf("%w: %v", ErrClosed, err))
		return 0, nil, c.Err()
	}
	return id, ch, nil
}

type incoming struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *Error          `json:"error"`
}

func (c *Client) readLoop() {
	reader := bufio.NewReaderSize(c.conn, 64<<10)
	for {
		line, err := reader.ReadBytes('\n')
		if err != nil {
			c.fail(fmt.Errorf("%w: %v", ErrClosed, err))
			return
		}
		items := []json.RawMessage{line}
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 && trimmed[0] == '[' {
			if err := json.Unmarshal(trimmed, &items); err != nil {
				c.fail(fmt.Errorf("%w: malformed batch reply: %v", ErrClosed, err))
				return
			}
		}
		for _, item := range items {
			var message incoming
			if err := json.Unmarshal(item, &message); err != nil {
				c.fail(fmt.Errorf("%w: not JSON: %v", ErrClosed, err))
				c.conn.Close()
				return
			}
			if message.ID == nil && message.Method != "" {
				select {
				case c.notifications <- Notification{Method: message.Method, Params: message.Params}:
				case <-c.done:
					return
				}
				continue
			}
			var id int64
			if json.Unmarshal(message.ID, &id) != nil {
				continue // not an id of ours
			}
			c.mu.Lock()
			ch := c.pending[id]
			delete(c.pending, id)
			c.mu.Unlock()
			if ch == nil {
				continue // its caller gave up
			}
			if message.Error != nil {
				ch <- reply{err: message.Error}
			} else {
				ch <- reply{result: message.Result}
			}
		}
	}
}

// fail ends the connection once: every call waiting gets err.
func (c *Client) fail(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	pending := c.pending
	c.pending = make(map[int64]chan reply)
	c.mu.Unlock()
	close(c.done)
	for _, ch := range pending {
		ch <- reply{err: err}
	}
}

// Pong is daemon.ping's result.
type Pong struct {
	Pong    bool   `json:"pong"`
	Version string `json:"version"`
}

// Ping calls daemon.ping.
func (c *Client) Ping(ctx context.Context) (Pong, error) {
	var pong Pong
	err := c.Call(ctx, "daemon.ping", nil, &pong)
	return pong, err
}

// HandleURLResult is handle-url's result: whether a redirect session matched, and which.
type HandleURLResult struct {
	Handled bool    `json:"handled"`
	Session *string `json:"session"`
}

// HandleURL calls handle-url: completes the redirect session in progress whose return URL matches.
func (c *Client) HandleURL(ctx context.Context, url string) (HandleURLResult, error) {
	var result HandleURLResult
	err := c.Call(ctx, "handle-url", map[string]string{"url": url}, &result)
	return result, err
}
