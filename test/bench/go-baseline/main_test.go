package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
)

// The recorded review of a plain pod, as the apiserver sent it.
const recordedReview = "../../fixtures/admission-reviews/pod-create-sleep.json"

// A throwaway self-signed serving certificate for 127.0.0.1, trusted by the test's client only.
func testCertificate(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	cert, pool, err := selfSigned()
	if err != nil {
		t.Fatal(err)
	}
	return cert, pool
}

func TestAnswersAPodReviewWithTheEnvoyPatchOverHTTP2(t *testing.T) {
	body, err := os.ReadFile(recordedReview)
	if err != nil {
		t.Fatal(err)
	}
	var sent admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &sent); err != nil {
		t.Fatal(err)
	}
	cert, pool := testCertificate(t)
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	server := newWebhookServer(cert)
	go func() { _ = server.ServeTLS(listener, "", "") }()
	defer server.Close()

	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	response, err := client.Post("https://"+listener.Addr().String()+"/mutate", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer response.Body.Close()
	text, _ := io.ReadAll(response.Body)
	if response.StatusCode != http.StatusOK || response.Proto != "HTTP/2.0" {
		t.Fatalf("expected 200 over HTTP/2.0, got %d over %s: %s", response.StatusCode, response.Proto, text)
	}
	var got admissionv1.AdmissionReview
	if err := json.Unmarshal(text, &got); err != nil {
		t.Fatalf("the answer is not an AdmissionReview: %v: %s", err, text)
	}
	r := got.Response
	if got.APIVersion != "admission.k8s.io/v1" || got.Kind != "AdmissionReview" || r == nil || r.UID != sent.Request.UID || !r.Allowed {
		t.Fatalf("expected an allowed admission.k8s.io/v1 AdmissionReview for uid %s, got %s", sent.Request.UID, text)
	}
	if r.PatchType == nil || *r.PatchType != admissionv1.PatchTypeJSONPatch || string(r.Patch) != string(envoyPatch) {
		t.Fatalf("expected the Envoy JSONPatch %s, got %v %s", envoyPatch, r.PatchType, r.Patch)
	}
}

func TestDoesNotInjectAPodThatHasEnvoy(t *testing.T) {
	body, err := os.ReadFile(recordedReview)
	if err != nil {
		t.Fatal(err)
	}
	review, err := decodeReview(body)
	if err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	if err := json.Unmarshal(review.Request.Object.Raw, &pod); err != nil {
		t.Fatal(err)
	}
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "envoy", Image: "envoyproxy/envoy:v1.20.3"})
	if review.Request.Object.Raw, err = json.Marshal(&pod); err != nil {
		t.Fatal(err)
	}
	if response := mutate(review.Request); response.Patch != nil || !response.Allowed || response.UID != review.Request.UID {
		t.Fatalf("expected an allowed answer for uid %s without a patch for a pod with envoy, got uid %s allowed %v patch %s", review.Request.UID, response.UID, response.Allowed, response.Patch)
	}
}
