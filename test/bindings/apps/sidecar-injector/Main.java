// The same charts as app.ts, as a cdk8s Java app writes them. Kubernetes objects are LinkedHashMaps, which keep
// the order their keys are put in (Map.of does not, and its order changes from run to run: so would the YAML).
// With the argument `bad` a third chart has an injection name with a space and a container injected twice:
// a JsiiError, uncaught.
import io.github.cdk8s_sidecar_injector.FailurePolicy;
import io.github.cdk8s_sidecar_injector.InjectionProps;
import io.github.cdk8s_sidecar_injector.LabelSelectorTriggerOptions;
import io.github.cdk8s_sidecar_injector.MissingAction;
import io.github.cdk8s_sidecar_injector.MonitoringProps;
import io.github.cdk8s_sidecar_injector.OutdatedAction;
import io.github.cdk8s_sidecar_injector.ReconcilerProps;
import io.github.cdk8s_sidecar_injector.RevisionProps;
import io.github.cdk8s_sidecar_injector.RevisionTagProps;
import io.github.cdk8s_sidecar_injector.SidecarInjectorChart;
import io.github.cdk8s_sidecar_injector.SloProps;
import io.github.cdk8s_sidecar_injector.TargetKind;
import io.github.cdk8s_sidecar_injector.Trigger;
import io.github.cdk8s_sidecar_injector.GeneratedCertificatesOptions;
import io.github.cdk8s_sidecar_injector.WebhookCertificates;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.cdk8s.App;
import org.cdk8s.Duration;
import org.cdk8s.plus27.k8s.EnvVar;
import org.cdk8s.plus27.k8s.Quantity;

public class Main {
    /** A map of the keys and values given, in that order. */
    static Map<String, Object> map(final Object... keysAndValues) {
        final Map<String, Object> map = new LinkedHashMap<>();
        for (int i = 0; i < keysAndValues.length; i += 2) map.put((String) keysAndValues[i], keysAndValues[i + 1]);
        return map;
    }

    static final Map<String, Object> RESTRICTED = map(
            "allowPrivilegeEscalation", false,
            "capabilities", map("drop", List.of("ALL")),
            "runAsNonRoot", true,
            "seccompProfile", map("type", "RuntimeDefault"));

    static InjectionProps envoy(final String image) {
        return InjectionProps.builder()
                .name("envoy")
                .trigger(Trigger.always())
                .containers(List.of(map("image", image, "name", "envoy", "securityContext", RESTRICTED)))
                .build();
    }

    public static void main(final String[] args) {
        final String store = System.getenv().getOrDefault("INJECTOR_CERT_STORE", ".certs");
        final App app = new App();
        final SidecarInjectorChart chart = SidecarInjectorChart.Builder.create(app, "injector")
                .namespace("platform-injector")
                .failurePolicy(FailurePolicy.FAIL)
                .certificates(WebhookCertificates.generated(GeneratedCertificatesOptions.builder().storeDirectory(store + "/injector").build()))
                .injections(List.of(InjectionProps.builder()
                        .name("otel")
                        .trigger(Trigger.labelSelector(LabelSelectorTriggerOptions.builder().matchLabels(Map.of("otel.example.com/enabled", "true")).build()))
                        .targetKinds(List.of(TargetKind.DEPLOYMENT, TargetKind.STATEFUL_SET))
                        .env(List.of(EnvVar.builder().name("OTEL_SERVICE_NAME").value("{{name}}").build()))
                        .initContainers(List.of(map(
                                "image", "otel/opentelemetry-collector:0.110.0",
                                "name", "otel-agent",
                                "resources", map("requests", map("cpu", Quantity.fromString("50m"), "memory", Quantity.fromString("64Mi"))),
                                "restartPolicy", "Always",
                                "securityContext", RESTRICTED)))
                        .build()))
                .build();
        chart.getInjector().addInjection(InjectionProps.builder()
                .name("debug")
                .trigger(Trigger.requested())
                .containers(List.of(map("image", "busybox:1.36", "name", "debug", "securityContext", RESTRICTED)))
                .build());
        chart.getInjector().getWebhookConfiguration().getMetadata().addAnnotation("argocd.argoproj.io/sync-wave", "1");

        SidecarInjectorChart.Builder.create(app, "revisions")
                .namespace("injector-revisions")
                .certificates(WebhookCertificates.generated(GeneratedCertificatesOptions.builder().storeDirectory(store + "/revisions").build()))
                .revisions(List.of(
                        RevisionProps.builder().name("r1").injections(List.of(envoy("envoyproxy/envoy:v1.30.1"))).build(),
                        RevisionProps.builder().name("r2").injections(List.of(envoy("envoyproxy/envoy:v1.31.0"))).build()))
                .tags(List.of(
                        RevisionTagProps.builder().name("stable").revision("r1").defaultValue(true).build(),
                        RevisionTagProps.builder().name("canary").revision("r2").build()))
                .reconciler(ReconcilerProps.builder().missing(MissingAction.RESTART).outdated(OutdatedAction.IN_PLACE).intervalSeconds(60).build())
                .monitoring(MonitoringProps.builder()
                        .alertAfter(Duration.minutes(10))
                        .slo(SloProps.builder().objective(0.995).build())
                        .alertLabels(Map.of("team", "platform"))
                        .build())
                .build();

        if (Arrays.asList(args).contains("bad")) {
            SidecarInjectorChart.Builder.create(app, "bad")
                    .namespace("injector-bad")
                    .injections(List.of(
                            InjectionProps.builder().name("my envoy").trigger(Trigger.always())
                                    .containers(List.of(map("image", "envoyproxy/envoy:v1.31.0", "name", "envoy"))).build(),
                            InjectionProps.builder().name("envoy-copy").trigger(Trigger.always())
                                    .containers(List.of(map("image", "envoyproxy/envoy:v1.31.0", "name", "envoy"))).build()))
                    .build();
        }
        app.synth();
    }
}
