// The same charts as app.ts, as a cdk8s Go app writes them. Kubernetes objects are maps, which reach the library
// with their keys in alphabetical order (whatever order they are written in). With the argument `bad` a third
// chart has an injection name with a space and a container injected twice: a panic from the jsii runtime.
package main

import (
	"os"
	"slices"

	"github.com/aws/jsii-runtime-go"
	"github.com/cdk8s-sidecar-injector/cdk8s-sidecar-injector-go/cdk8ssidecarinjector"
	"github.com/cdk8s-team/cdk8s-core-go/cdk8s/v2"
	"github.com/cdk8s-team/cdk8s-plus-go/cdk8splus27/v2/k8s"
)

var restricted = map[string]interface{}{
	"allowPrivilegeEscalation": false,
	"capabilities":             map[string]interface{}{"drop": []string{"ALL"}},
	"runAsNonRoot":             true,
	"seccompProfile":           map[string]interface{}{"type": "RuntimeDefault"},
}

func envoy(image string) *cdk8ssidecarinjector.InjectionProps {
	return &cdk8ssidecarinjector.InjectionProps{
		Name:       jsii.String("envoy"),
		Trigger:    cdk8ssidecarinjector.Trigger_Always(),
		Containers: &[]interface{}{map[string]interface{}{"image": image, "name": "envoy", "securityContext": restricted}},
	}
}

func main() {
	defer jsii.Close()
	store := os.Getenv("INJECTOR_CERT_STORE")
	if store == "" {
		store = ".certs"
	}
	app := cdk8s.NewApp(nil)
	chart := cdk8ssidecarinjector.NewSidecarInjectorChart(app, jsii.String("injector"), &cdk8ssidecarinjector.SidecarInjectorChartProps{
		Namespace:     jsii.String("platform-injector"),
		FailurePolicy: cdk8ssidecarinjector.FailurePolicy_FAIL,
		Certificates:  cdk8ssidecarinjector.WebhookCertificates_Generated(&cdk8ssidecarinjector.GeneratedCertificatesOptions{StoreDirectory: jsii.String(store + "/injector")}),
		Injections: &[]*cdk8ssidecarinjector.InjectionProps{{
			Name:        jsii.String("otel"),
			Trigger:     cdk8ssidecarinjector.Trigger_LabelSelector(&cdk8ssidecarinjector.LabelSelectorTriggerOptions{MatchLabels: &map[string]*string{"otel.example.com/enabled": jsii.String("true")}}),
			TargetKinds: &[]cdk8ssidecarinjector.TargetKind{cdk8ssidecarinjector.TargetKind_DEPLOYMENT, cdk8ssidecarinjector.TargetKind_STATEFUL_SET},
			Env:         &[]interface{}{&k8s.EnvVar{Name: jsii.String("OTEL_SERVICE_NAME"), Value: jsii.String("{{name}}")}},
			InitContainers: &[]interface{}{map[string]interface{}{
				"image":           "otel/opentelemetry-collector:0.110.0",
				"name":            "otel-agent",
				"resources":       map[string]interface{}{"requests": map[string]interface{}{"cpu": k8s.Quantity_FromString(jsii.String("50m")), "memory": k8s.Quantity_FromString(jsii.String("64Mi"))}},
				"restartPolicy":   "Always",
				"securityContext": restricted,
			}},
		}},
	})
	chart.Injector().AddInjection(&cdk8ssidecarinjector.InjectionProps{
		Name:       jsii.String("debug"),
		Trigger:    cdk8ssidecarinjector.Trigger_Requested(),
		Containers: &[]interface{}{map[string]interface{}{"image": "busybox:1.36", "name": "debug", "securityContext": restricted}},
	})
	chart.Injector().WebhookConfiguration().Metadata().AddAnnotation(jsii.String("argocd.argoproj.io/sync-wave"), jsii.String("1"))

	cdk8ssidecarinjector.NewSidecarInjectorChart(app, jsii.String("revisions"), &cdk8ssidecarinjector.SidecarInjectorChartProps{
		Namespace:    jsii.String("injector-revisions"),
		Certificates: cdk8ssidecarinjector.WebhookCertificates_Generated(&cdk8ssidecarinjector.GeneratedCertificatesOptions{StoreDirectory: jsii.String(store + "/revisions")}),
		Revisions: &[]*cdk8ssidecarinjector.RevisionProps{
			{Name: jsii.String("r1"), Injections: &[]*cdk8ssidecarinjector.InjectionProps{envoy("envoyproxy/envoy:v1.30.1")}},
			{Name: jsii.String("r2"), Injections: &[]*cdk8ssidecarinjector.InjectionProps{envoy("envoyproxy/envoy:v1.31.0")}},
		},
		Tags: &[]*cdk8ssidecarinjector.RevisionTagProps{
			{Name: jsii.String("stable"), Revision: jsii.String("r1"), Default: jsii.Bool(true)},
			{Name: jsii.String("canary"), Revision: jsii.String("r2")},
		},
		Reconciler: &cdk8ssidecarinjector.ReconcilerProps{Missing: cdk8ssidecarinjector.MissingAction_RESTART, Outdated: cdk8ssidecarinjector.OutdatedAction_IN_PLACE, IntervalSeconds: jsii.Number(60)},
		Monitoring: &cdk8ssidecarinjector.MonitoringProps{
			AlertAfter:  cdk8s.Duration_Minutes(jsii.Number(10)),
			Slo:         &cdk8ssidecarinjector.SloProps{Objective: jsii.Number(0.995)},
			AlertLabels: &map[string]*string{"team": jsii.String("platform")},
		},
	})

	if slices.Contains(os.Args[1:], "bad") {
		cdk8ssidecarinjector.NewSidecarInjectorChart(app, jsii.String("bad"), &cdk8ssidecarinjector.SidecarInjectorChartProps{
			Namespace: jsii.String("injector-bad"),
			Injections: &[]*cdk8ssidecarinjector.InjectionProps{
				{Name: jsii.String("my envoy"), Trigger: cdk8ssidecarinjector.Trigger_Always(), Containers: &[]interface{}{map[string]interface{}{"image": "envoyproxy/envoy:v1.31.0", "name": "envoy"}}},
				{Name: jsii.String("envoy-copy"), Trigger: cdk8ssidecarinjector.Trigger_Always(), Containers: &[]interface{}{map[string]interface{}{"image": "envoyproxy/envoy:v1.31.0", "name": "envoy"}}},
			},
		})
	}
	app.Synth()
}
