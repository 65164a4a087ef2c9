package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The scripted model's latency, waited out either on a timer of the
// server's process (-model-wait timer) or as a reply over a loopback
// connection from this tool's own process (-model-wait net), as a real
// provider's reply comes: the network poller wakes the call. The two differ
// under a collection: the runtime's idle-priority mark workers give their
// processor back when the network has something, not when a timer is due
// (its pollWork), so a timer due during a mark phase fires late.

// delayServer answers each "ID NANOSECONDS" line of a connection with
// "ID" once that time has passed. It runs in the tool's process, whose heap
// is small: its own collections are short.
func delayServer() (addr string, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serveDelays(c)
		}
	}()
	return ln.Addr().String(), nil
}

func serveDelays(c net.Conn) {
	defer c.Close()
	var mu sync.Mutex
	in := bufio.NewScanner(c)
	for in.Scan() {
		id, ns, ok := strings.Cut(in.Text(), " ")
		d, err := strconv.ParseInt(ns, 10, 64)
		if !ok || err != nil {
			return
		}
		line := id + "\n"
		time.AfterFunc(time.Duration(d), func() {
			mu.Lock()
			defer mu.Unlock()
			_, _ = c.Write([]byte(line))
		})
	}
}

// delayClient waits out delays with a delayServer, over one connection.
type delayClient struct {
	mu      sync.Mutex
	conn    net.Conn
	next    int64
	waiting map[int64]chan struct{}
}

func dialDelays(addr string) (*delayClient, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	d := &delayClient{conn: c, waiting: map[int64]chan struct{}{}}
	go d.read()
	return d, nil
}

func (d *delayClient) read() {
	in := bufio.NewScanner(d.conn)
	for in.Scan() {
		id, err := strconv.ParseInt(in.Text(), 10, 64)
		if err != nil {
			continue
		}
		d.mu.Lock()
		ch := d.waiting[id]
		delete(d.waiting, id)
		d.mu.Unlock()
		if ch != nil {
			close(ch)
		}
	}
}

// wait returns after dur, as the delay server tells it, or when ctx ends.
func (d *delayClient) wait(ctx context.Context, dur time.Duration) error {
	ch := make(chan struct{})
	d.mu.Lock()
	d.next++
	id := d.next
	d.waiting[id] = ch
	_, err := fmt.Fprintf(d.conn, "%d %d\n", id, dur.Nanoseconds())
	d.mu.Unlock()
	if err != nil {
		return err
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		d.mu.Lock()
		delete(d.waiting, id)
		d.mu.Unlock()
		return ctx.Err()
	}
}

// timerWait waits out dur on a timer of this process.
func timerWait(ctx context.Context, dur time.Duration) error {
	t := time.NewTimer(dur)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
