// The anchor of `npm run attack` (test/bench/attack.ts): seed 000's design, a mutating webhook as the
// simplest Go program would be, with the standard library only (net/http, crypto/tls, encoding/json).
// Every admission gets the same fixed patch (the Envoy sidecar); no config, no engine. What it shows
// is how Go's http.Server holds up against clients that try to hold its connections: no connection
// cap, a goroutine per connection, ReadHeaderTimeout for headers, IdleTimeout for keep-alive.
//
//	ANCHOR_TLS_DIR=<dir with tls.crt, tls.key> ANCHOR_PORT=8443 ANCHOR_OPS_PORT=8081 ./go-anchor
//
// POST /mutate over TLS; GET /healthz over plain HTTP on the ops port (as controller-runtime does)
// and on the TLS port.
package main

import (
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

type admissionReview struct {
	APIVersion string             `json:"apiVersion"`
	Kind       string             `json:"kind"`
	Request    *admissionRequest  `json:"request,omitempty"`
	Response   *admissionResponse `json:"response,omitempty"`
}

type admissionRequest struct {
	UID string `json:"uid"`
}

type admissionResponse struct {
	UID       string `json:"uid"`
	Allowed   bool   `json:"allowed"`
	PatchType string `json:"patchType,omitempty"`
	Patch     string `json:"patch,omitempty"`
}

// The Envoy sidecar of the default app, as one fixed JSONPatch operation.
var envoyPatch = base64.StdEncoding.EncodeToString([]byte(`[{"op":"add","path":"/spec/containers/-","value":{"name":"envoy","image":"envoyproxy/envoy:v1.20.3","args":["--config-path","/etc/envoy/envoy.yaml"],"ports":[{"containerPort":15001,"name":"envoy","protocol":"TCP"}],"resources":{"requests":{"cpu":"50m","memory":"64Mi"},"limits":{"memory":"128Mi"}},"securityContext":{"runAsNonRoot":true,"runAsUser":101,"allowPrivilegeEscalation":false,"capabilities":{"drop":["ALL"]}}}}]`))

// The apiserver sends at most about 3 MiB objects; twice that for an UPDATE with oldObject.
const maxBody = 7 << 20

func mutate(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var review admissionReview
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
		http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
		return
	}
	answer := admissionReview{
		APIVersion: "admission.k8s.io/v1",
		Kind:       "AdmissionReview",
		Response:   &admissionResponse{UID: review.Request.UID, Allowed: true, PatchType: "JSONPatch", Patch: envoyPatch},
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(answer)
}

func healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write([]byte("ok\n"))
}

func main() {
	dir := os.Getenv("ANCHOR_TLS_DIR")
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		log.Fatalf("loading the certificate from %s: %v", dir, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/mutate", mutate)
	mux.HandleFunc("/healthz", healthz)
	webhook := &http.Server{
		Addr:              "127.0.0.1:" + os.Getenv("ANCHOR_PORT"),
		Handler:           mux,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	opsMux := http.NewServeMux()
	opsMux.HandleFunc("/healthz", healthz)
	ops := &http.Server{Addr: "127.0.0.1:" + os.Getenv("ANCHOR_OPS_PORT"), Handler: opsMux, ReadHeaderTimeout: 5 * time.Second}
	go func() { log.Fatal(ops.ListenAndServe()) }()
	log.Printf("listening on %s (ops %s)", webhook.Addr, ops.Addr)
	log.Fatal(webhook.ListenAndServeTLS("", ""))
}
