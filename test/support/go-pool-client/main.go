// A client that pools connections the way the apiserver's does, for test/server/shutdown.test.ts:
// Go's net/http Transport, HTTP/1.1 keep-alive, an idle pool per host (MaxIdleConnsPerHost 25 and
// IdleConnTimeout 90 s, client-go's defaults), POST /mutate with an AdmissionReview. Standard library
// only. Every connection it dials is tracked: whether it has carried a request, and when the
// Transport closes it (as it does once the server has closed an idle one).
//
//	POOL_PORT=8443 POOL_CA_FILE=ca.crt POOL_SERVER_NAME=svc POOL_BODY_FILE=review.json POOL_DIAL_DELAY_MS=300 ./go-pool-client
//
// New connections wait POOL_DIAL_DELAY_MS before dialing (a new connection costs more than a request
// on a pooled one): a request that finds no idle connection dials one, and when another request's
// connection comes back to the pool first, the request takes that one and the Transport keeps the new
// connection idle in its pool, never having sent a byte on it. That is what the apiserver's pool
// holds, and what a server that closes only "idle" connections (Node's closeIdleConnections) misses.
//
// "burst-held" makes that happen on any machine and with any Go: the dials its requests start wait
// until the burst is over (every request served by a connection that came back first), and dial with
// a context of their own, since Go before 1.23 dials with the request's, which is cancelled once the
// request is answered on another connection.
//
// Commands on stdin, one a line; one JSON line on stdout for each, and one for each connection the
// Transport closes:
//
//	burst <requests> <concurrency>   requests over that many goroutines at once
//	burst-held <requests> <concurrency>
//	                                 the same, the dials it starts held until it is over
//	one                              one request
//	state                            connections open, and how many of them never carried a request
//	exit
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

var (
	out   = json.NewEncoder(os.Stdout)
	outMu sync.Mutex
)

func emit(line map[string]any) {
	outMu.Lock()
	defer outMu.Unlock()
	_ = out.Encode(line)
}

// trackedConn is a TLS connection the Transport dialed.
type trackedConn struct {
	net.Conn
	pool    *pool
	id      int
	mu      sync.Mutex
	carried int
	closed  bool
}

func (c *trackedConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	c.carried++
	c.mu.Unlock()
	return c.Conn.Write(b)
}

func (c *trackedConn) Close() error {
	c.mu.Lock()
	already := c.closed
	c.closed = true
	c.mu.Unlock()
	if !already {
		c.pool.closed(c)
	}
	return c.Conn.Close()
}

type pool struct {
	mu    sync.Mutex
	next  int
	conns map[int]*trackedConn
}

func (p *pool) add(c *trackedConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next++
	c.id = p.next
	p.conns[c.id] = c
}

func (p *pool) closed(c *trackedConn) {
	p.mu.Lock()
	delete(p.conns, c.id)
	open := len(p.conns)
	p.mu.Unlock()
	c.mu.Lock()
	carried := c.carried
	c.mu.Unlock()
	emit(map[string]any{"event": "closed", "id": c.id, "carriedWrites": carried, "open": open})
}

func (p *pool) state() map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	neverUsed := 0
	for _, c := range p.conns {
		c.mu.Lock()
		if c.carried == 0 {
			neverUsed++
		}
		c.mu.Unlock()
	}
	return map[string]any{"event": "state", "open": len(p.conns), "neverUsed": neverUsed}
}

type result struct {
	Status     int    `json:"status"`
	Connection string `json:"connection,omitempty"`
	Error      string `json:"error,omitempty"`
}

func main() {
	port := os.Getenv("POOL_PORT")
	caPEM, err := os.ReadFile(os.Getenv("POOL_CA_FILE"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	body, err := os.ReadFile(os.Getenv("POOL_BODY_FILE"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	delayMs, _ := strconv.Atoi(os.Getenv("POOL_DIAL_DELAY_MS"))
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	tlsConfig := &tls.Config{RootCAs: roots, ServerName: os.Getenv("POOL_SERVER_NAME"), MinVersion: tls.VersionTLS12}
	p := &pool{conns: map[int]*trackedConn{}}
	var (
		holdMu  sync.Mutex
		release chan struct{} // non-nil while a held burst runs
		dialing sync.WaitGroup
	)
	transport := &http.Transport{
		DialTLSContext: func(_ context.Context, network, addr string) (net.Conn, error) {
			dialing.Add(1)
			defer dialing.Done()
			holdMu.Lock()
			held := release
			holdMu.Unlock()
			if held != nil {
				// Until the burst is over; a bound in case no connection came back to serve it.
				select {
				case <-held:
				case <-time.After(10 * time.Second):
				}
			}
			time.Sleep(time.Duration(delayMs) * time.Millisecond)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			raw, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			conn := tls.Client(raw, tlsConfig)
			if err := conn.HandshakeContext(ctx); err != nil {
				raw.Close()
				return nil, err
			}
			tracked := &trackedConn{Conn: conn, pool: p}
			p.add(tracked)
			return tracked, nil
		},
		MaxIdleConnsPerHost: 25,
		IdleConnTimeout:     90 * time.Second,
	}
	client := &http.Client{Transport: transport, Timeout: 10 * time.Second}
	url := "https://127.0.0.1:" + port + "/mutate?timeout=10s"
	send := func() result {
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		res, err := client.Do(req)
		if err != nil {
			return result{Error: err.Error()}
		}
		defer res.Body.Close()
		if _, err := io.Copy(io.Discard, res.Body); err != nil {
			return result{Status: res.StatusCode, Error: err.Error()}
		}
		// Go reads a "Connection: close" into res.Close, and closes the connection after the body.
		connection := "keep-alive"
		if res.Close {
			connection = "close"
		}
		return result{Status: res.StatusCode, Connection: connection}
	}

	lines := bufio.NewScanner(os.Stdin)
	for lines.Scan() {
		fields := strings.Fields(lines.Text())
		if len(fields) == 0 {
			continue
		}
		switch fields[0] {
		case "burst", "burst-held":
			if fields[0] == "burst-held" {
				holdMu.Lock()
				release = make(chan struct{})
				holdMu.Unlock()
			}
			requests, _ := strconv.Atoi(fields[1])
			concurrency, _ := strconv.Atoi(fields[2])
			var mu sync.Mutex
			ok := 0
			failed := []result{}
			work := make(chan struct{}, requests)
			for i := 0; i < requests; i++ {
				work <- struct{}{}
			}
			close(work)
			var wg sync.WaitGroup
			for g := 0; g < concurrency; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range work {
						r := send()
						mu.Lock()
						if r.Status == 200 && r.Error == "" {
							ok++
						} else {
							failed = append(failed, r)
						}
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			if fields[0] == "burst-held" {
				holdMu.Lock()
				close(release)
				release = nil
				holdMu.Unlock()
				dialing.Wait()
			}
			line := p.state()
			line["event"] = "burst"
			line["ok"] = ok
			line["failed"] = failed
			emit(line)
		case "one":
			r := send()
			emit(map[string]any{"event": "one", "status": r.Status, "connection": r.Connection, "error": r.Error})
		case "state":
			emit(p.state())
		case "exit":
			return
		}
	}
}
