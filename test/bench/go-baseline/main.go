// The Go baseline of `npm run bench:cluster` (test/bench/cluster-admission.ts): a mutating webhook as
// the field writes one, net/http over TLS (HTTP/2 offered by ALPN, as Go's server does by default, and
// as the apiserver's webhook client uses when offered), the AdmissionReview and the pod decoded with
// k8s.io/api's types by apimachinery's deserializer, the same fixed Envoy patch as the Go anchor
// (test/bench/go-anchor/main.go), and no log line per request. The floor a Go webhook spends per
// admission on the apiserver's path, as the bare node:https baseline is Node's.
//
//	GO_BASELINE_TLS_DIR=<dir with tls.crt, tls.key> GO_BASELINE_PORT=8443 GO_BASELINE_OPS_PORT=8081 ./go-baseline
//
// POST /mutate over TLS; GET /healthz and /readyz over plain HTTP on the ops port (as controller-runtime
// does). Prints one JSON line {"msg":"listening",...} once both listen; exits on SIGTERM.
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

// The apiserver sends at most about 3 MiB objects; twice that for an UPDATE with oldObject.
const maxBody = 7 << 20

func serveMutate(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	review, err := decodeReview(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	text, err := answer(review)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(text)
}

func healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write([]byte("ok\n"))
}

// newWebhookServer is the TLS server: Go's defaults (HTTP/1.1 and HTTP/2 by ALPN), with the deadlines a
// server strangers reach needs.
func newWebhookServer(cert tls.Certificate) *http.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/mutate", serveMutate)
	mux.HandleFunc("/healthz", healthz)
	return &http.Server{
		Handler:           mux,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
}

func newOpsServer() *http.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", healthz)
	mux.HandleFunc("/readyz", healthz)
	return &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, IdleTimeout: 60 * time.Second}
}

func main() {
	dir := os.Getenv("GO_BASELINE_TLS_DIR")
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		log.Fatalf("loading the certificate from %q: %v", dir, err)
	}
	webhookListener, err := net.Listen("tcp", "127.0.0.1:"+os.Getenv("GO_BASELINE_PORT"))
	if err != nil {
		log.Fatal(err)
	}
	opsListener, err := net.Listen("tcp", "127.0.0.1:"+os.Getenv("GO_BASELINE_OPS_PORT"))
	if err != nil {
		log.Fatal(err)
	}
	webhook, ops := newWebhookServer(cert), newOpsServer()
	go func() {
		if err := ops.Serve(opsListener); !errors.Is(err, http.ErrServerClosed) {
			log.Fatal(err)
		}
	}()
	go func() {
		if err := webhook.ServeTLS(webhookListener, "", ""); !errors.Is(err, http.ErrServerClosed) {
			log.Fatal(err)
		}
	}()
	line, _ := json.Marshal(map[string]any{"msg": "listening", "port": webhookListener.Addr().(*net.TCPAddr).Port, "opsPort": opsListener.Addr().(*net.TCPAddr).Port})
	fmt.Println(string(line))
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = webhook.Shutdown(ctx)
	_ = ops.Shutdown(ctx)
}
