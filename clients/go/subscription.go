package stpd

import (
	"context"
	"encoding/json"
	"errors"
	"syscall"
	"time"
)

// Filter selects events: absent members match every event; Types may end in ".*" (a whole kind).
type Filter struct {
	Objects []string `json:"objects,omitempty"`
	Types   []string `json:"types,omitempty"`
}

// Event is the params of an "event" notification: the object's state after a change.
type Event struct {
	Subscription string          `json:"subscription"`
	Seq          int64           `json:"seq"`
	Type         string          `json:"type"`
	Time         string          `json:"time"`
	ObjectID     string          `json:"objectId"`
	Object       json.RawMessage `json:"object"`
}

type dropped struct {
	Subscription string `json:"subscription"`
	Reason       string `json:"reason"`
	ResumeSince  int64  `json:"resumeSince"`
}

// SubscribeOptions says where a subscription starts and what it sees.
type SubscribeOptions struct {
	// Since replays the matching events after it first; nil: only events after now.
	Since  *int64
	Filter *Filter
	// NoReconnect makes Next return the error instead of subscribing again after events.dropped
	// or a lost connection.
	NoReconnect bool
	// MaxDelay bounds the wait between attempts to subscribe again (default 2 s).
	MaxDelay time.Duration
}

// Subscription is the events of one events.subscribe, on a connection of its own that survives
// events.dropped, daemon restarts and socket activation. Position is the seq up to which every
// matching event was returned by Next (or did not match): each new events.subscribe passes it as
// since, so nothing is missed and nothing is returned twice. Use it from one goroutine.
type Subscription struct {
	path    string
	options SubscribeOptions
	client  *Client

	// ID is the current events.subscribe's id; Position as above, once known.
	ID       string
	Position int64
	known    bool
	// Drops counts events.dropped survived, Reconnects subscriptions made after the first.
	Drops, Reconnects int
}

// Subscribe connects to path and subscribes; an error of this first attempt is returned as is.
func Subscribe(ctx context.Context, path string, options SubscribeOptions) (*Subscription, error) {
	s := &Subscription{path: path, options: options}
	if options.Since != nil {
		s.Position, s.known = *options.Since, true
	}
	if err := s.subscribe(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Close ends the subscription.
func (s *Subscription) Close() error {
	if s.client == nil {
		return nil
	}
	err := s.client.Close()
	s.client = nil
	return err
}

// Next returns the next event, waiting as long as ctx allows. CursorExpired and CursorAhead on a
// resume are returned (errors.Is(err, ErrCursorExpired)): retrying cannot fix them.
func (s *Subscription) Next(ctx context.Context) (Event, error) {
	for {
		if s.client == nil {
			if err := s.resume(ctx); err != nil {
				return Event{}, err
			}
		}
		var note Notification
		select {
		case note = <-s.client.Notifications():
		default:
			select {
			case note = <-s.client.Notifications():
			case <-s.client.Done():
				if err := s.lost(s.client.Err()); err != nil {
					return Event{}, err
				}
				continue
			case <-ctx.Done():
				return Event{}, ctx.Err()
			}
		}
		switch note.Method {
		case "event":
			var event Event
			if err := json.Unmarshal(note.Params, &event); err != nil {
				return Event{}, err
			}
			if event.Subscription != s.ID || (s.known && event.Seq <= s.Position) {
				continue // another subscription's, or sent again by a resumed one
			}
			s.Position, s.known = event.Seq, true
			return event, nil
		case "events.dropped":
			var drop dropped
			if err := json.Unmarshal(note.Params, &drop); err != nil || drop.Subscription != s.ID {
				continue
			}
			// Every event up to ResumeSince was sent, and each one read was returned: the
			// others did not match. Resuming after it loses nothing.
			s.Drops++
			if drop.ResumeSince > s.Position {
				s.Position = drop.ResumeSince
			}
			s.known = true
			if err := s.lost(errors.New("stpd: the daemon dropped the subscription (" + drop.Reason + ")")); err != nil {
				return Event{}, err
			}
		}
	}
}

func (s *Subscription) lost(why error) error {
	s.client.Close()
	s.client = nil
	if s.options.NoReconnect {
		return why
	}
	return nil
}

func (s *Subscription) subscribe(ctx context.Context) error {
	client, err := Dial(s.path)
	if err != nil {
		return err
	}
	params := map[string]any{}
	if s.known {
		params["since"] = s.Position
	}
	if s.options.Filter != nil {
		params["filter"] = s.options.Filter
	}
	var reply struct {
		Subscription string `json:"subscription"`
		LatestSeq    int64  `json:"latestSeq"`
	}
	if err := client.Call(ctx, "events.subscribe", params, &reply); err != nil {
		client.Close()
		return err
	}
	if !s.known {
		s.Position, s.known = reply.LatestSeq, true
	}
	s.ID = reply.Subscription
	s.client = client
	return nil
}

// resume subscribes again from Position, retrying while the daemon is away (a restart, socket
// activation starting it), every 100 ms doubling up to MaxDelay, until ctx ends.
func (s *Subscription) resume(ctx context.Context) error {
	delay, maxDelay := 100*time.Millisecond, s.options.MaxDelay
	if maxDelay <= 0 {
		maxDelay = 2 * time.Second
	}
	for {
		err := s.subscribe(ctx)
		if err == nil {
			s.Reconnects++
			return nil
		}
		if !transient(err) {
			return err
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return ctx.Err()
		}
		if delay *= 2; delay > maxDelay {
			delay = maxDelay
		}
	}
}

func transient(err error) bool {
	return errors.Is(err, ErrClosed) || errors.Is(err, ErrShuttingDown) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNRESET)
}
