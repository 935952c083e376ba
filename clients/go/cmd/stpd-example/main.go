// Command stpd-example is a small program on the Go client (package stpd): what a Go app does
// with stpd.
//
//	stpd-example [-socket PATH] ping                  daemon.ping, and daemon.status pipelined with it
//	stpd-example [-socket PATH] call METHOD [JSON]    any method; the result as JSON
//	stpd-example [-socket PATH] handle-url URL        what a desktop URL handler does
//	stpd-example [-socket PATH] watch [-since N] [-type T,...] [-count N]
//	                                                  events as JSON lines; resumes after
//	                                                  events.dropped and daemon restarts
//
// Results go to stdout as JSON; an error reply goes to stderr as {"name","code","message","data"}
// with exit status 1; 3 when stpd cannot be reached. The socket defaults as stpctl's does.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"

	"stpd"
)

const usage = "usage: stpd-example [-socket PATH] ping | call METHOD [JSON] | handle-url URL | watch [-since N] [-type T,...] [-count N]"

func main() {
	socket := flag.String("socket", stpd.DefaultSocketPath(), "stpd's socket")
	flag.Parse()
	os.Exit(run(*socket, flag.Args()))
}

func run(socket string, args []string) int {
	ctx := context.Background()
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, usage)
		return 2
	}
	if args[0] == "watch" {
		options := flag.NewFlagSet("watch", flag.ContinueOnError)
		since := options.Int64("since", -1, "replay the events after this seq first")
		types := options.String("type", "", "only these event types (comma-separated, kind.* allowed)")
		count := options.Int("count", 0, "stop after this many events")
		if options.Parse(args[1:]) != nil {
			return 2
		}
		return report(watch(ctx, socket, *since, *types, *count))
	}
	client, err := stpd.Dial(socket)
	if err != nil {
		return report(err)
	}
	defer client.Close()
	switch {
	case args[0] == "ping":
		// Two requests in flight at once on one connection; each reply finds its own call.
		var pong stpd.Pong
		var status struct {
			Pid        int    `json:"pid"`
			Activation string `json:"activation"`
		}
		var wg sync.WaitGroup
		var pingErr, statusErr error
		wg.Add(2)
		go func() { defer wg.Done(); pong, pingErr = client.Ping(ctx) }()
		go func() { defer wg.Done(); statusErr = client.Call(ctx, "daemon.status", nil, &status) }()
		wg.Wait()
		if pingErr != nil {
			return report(pingErr)
		}
		if statusErr != nil {
			return report(statusErr)
		}
		emit(pong)
		emit(status)
	case args[0] == "call" && len(args) >= 2:
		var params any
		if len(args) > 2 {
			if err := json.Unmarshal([]byte(args[2]), &params); err != nil {
				fmt.Fprintf(os.Stderr, "params: %v\n", err)
				return 2
			}
		}
		var result json.RawMessage
		if err := client.Call(ctx, args[1], params, &result); err != nil {
			return report(err)
		}
		emit(result)
	case args[0] == "handle-url" && len(args) == 2:
		result, err := client.HandleURL(ctx, args[1])
		if err != nil {
			return report(err)
		}
		emit(result)
	default:
		fmt.Fprintln(os.Stderr, usage)
		return 2
	}
	return 0
}

func watch(ctx context.Context, socket string, since int64, types string, count int) error {
	options := stpd.SubscribeOptions{}
	if since >= 0 {
		options.Since = &since
	}
	if types != "" {
		options.Filter = &stpd.Filter{Types: strings.Split(types, ",")}
	}
	events, err := stpd.Subscribe(ctx, socket, options)
	if err != nil {
		return err
	}
	defer events.Close()
	resumed := 0
	for seen := 0; count == 0 || seen < count; seen++ {
		event, err := events.Next(ctx)
		if err != nil {
			return err
		}
		if events.Drops+events.Reconnects != resumed {
			resumed = events.Drops + events.Reconnects
			fmt.Fprintf(os.Stderr, "resumed (drops %d, reconnects %d)\n", events.Drops, events.Reconnects)
		}
		emit(map[string]any{"seq": event.Seq, "type": event.Type, "objectId": event.ObjectID})
	}
	return nil
}

func emit(value any) {
	line, _ := json.Marshal(value)
	fmt.Println(string(line))
}

func report(err error) int {
	if err == nil {
		return 0
	}
	var rpcErr *stpd.Error
	if errors.As(err, &rpcErr) {
		line, _ := json.Marshal(map[string]any{
			"name": rpcErr.Name(), "code": rpcErr.Code, "message": rpcErr.Message, "data": rpcErr.Data,
		})
		fmt.Fprintln(os.Stderr, string(line))
		return 1
	}
	var dialErr *net.OpError
	if errors.As(err, &dialErr) && dialErr.Op == "dial" {
		fmt.Fprintf(os.Stderr, "cannot connect to stpd: %v\n", err)
		return 3
	}
	fmt.Fprintln(os.Stderr, err)
	return 6
}
