package main

import (
	"encoding/json"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

// The Envoy sidecar of the default app as one fixed JSONPatch operation: the patch of
// test/bench/go-anchor/main.go, byte for byte.
var envoyPatch = []byte(`[{"op":"add","path":"/spec/containers/-","value":{"name":"envoy","image":"envoyproxy/envoy:v1.20.3","args":["--config-path","/etc/envoy/envoy.yaml"],"ports":[{"containerPort":15001,"name":"envoy","protocol":"TCP"}],"resources":{"requests":{"cpu":"50m","memory":"64Mi"},"limits":{"memory":"128Mi"}},"securityContext":{"runAsNonRoot":true,"runAsUser":101,"allowPrivilegeEscalation":false,"capabilities":{"drop":["ALL"]}}}}]`)

// The decoder controller-runtime's admission webhooks use: apimachinery's universal deserializer over a
// scheme that knows the admission and core types.
var deserializer = func() runtime.Decoder {
	scheme := runtime.NewScheme()
	if err := admissionv1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := corev1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	return serializer.NewCodecFactory(scheme).UniversalDeserializer()
}()

// decodeReview reads an admission.k8s.io/v1 AdmissionReview with a request.
func decodeReview(body []byte) (*admissionv1.AdmissionReview, error) {
	review := &admissionv1.AdmissionReview{}
	if _, _, err := deserializer.Decode(body, nil, review); err != nil {
		return nil, fmt.Errorf("not an AdmissionReview: %w", err)
	}
	if review.Request == nil {
		return nil, fmt.Errorf("an AdmissionReview without a request")
	}
	return review, nil
}

// mutate answers a request: the pod decoded as corev1.Pod (as a webhook that reads the pod must), then
// the fixed Envoy patch, or no patch when the pod has an envoy container already (the apiserver's
// reinvocation, or a pod injected by hand). The request's UID is always echoed.
func mutate(request *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	response := &admissionv1.AdmissionResponse{UID: request.UID, Allowed: true}
	pod := &corev1.Pod{}
	if _, _, err := deserializer.Decode(request.Object.Raw, nil, pod); err != nil {
		// Allowed, unpatched: this is the bench's floor, not a policy; the message says why.
		response.Warnings = []string{fmt.Sprintf("go-baseline: the object is not a Pod (%v); not injected", err)}
		return response
	}
	for _, container := range pod.Spec.Containers {
		if container.Name == "envoy" {
			return response
		}
	}
	patchType := admissionv1.PatchTypeJSONPatch
	response.PatchType = &patchType
	response.Patch = envoyPatch
	return response
}

// answer is the AdmissionReview sent back: the request's apiVersion and kind, the response.
func answer(review *admissionv1.AdmissionReview) ([]byte, error) {
	return json.Marshal(&admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: mutate(review.Request)})
}
