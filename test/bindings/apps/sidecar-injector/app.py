# The same charts as app.ts, as a cdk8s Python app writes them (the README's Python example, and the second
# chart). Kubernetes objects are dicts, which keep the order their keys are written in. With the argument `bad`
# a third chart has an injection name with a space and a container injected twice: a RuntimeError.
import os
import sys

from cdk8s import App, Duration
from cdk8s_plus_27 import k8s
from cdk8s_sidecar_injector import (
    FailurePolicy,
    InjectionProps,
    MissingAction,
    MonitoringProps,
    OutdatedAction,
    ReconcilerProps,
    RevisionProps,
    RevisionTagProps,
    SidecarInjectorChart,
    SloProps,
    TargetKind,
    Trigger,
    WebhookCertificates,
)

store = os.environ.get('INJECTOR_CERT_STORE', '.certs')
restricted = {'allowPrivilegeEscalation': False, 'capabilities': {'drop': ['ALL']}, 'runAsNonRoot': True, 'seccompProfile': {'type': 'RuntimeDefault'}}

app = App()
chart = SidecarInjectorChart(
    app, 'injector',
    namespace='platform-injector',
    failure_policy=FailurePolicy.FAIL,
    certificates=WebhookCertificates.generated(store_directory=f'{store}/injector'),
    injections=[
        InjectionProps(
            name='otel',
            trigger=Trigger.label_selector(match_labels={'otel.example.com/enabled': 'true'}),
            target_kinds=[TargetKind.DEPLOYMENT, TargetKind.STATEFUL_SET],
            env=[k8s.EnvVar(name='OTEL_SERVICE_NAME', value='{{name}}')],
            init_containers=[{
                'image': 'otel/opentelemetry-collector:0.110.0',
                'name': 'otel-agent',
                'resources': {'requests': {'cpu': k8s.Quantity.from_string('50m'), 'memory': k8s.Quantity.from_string('64Mi')}},
                'restartPolicy': 'Always',
                'securityContext': restricted,
            }],
        ),
    ],
)
chart.injector.add_injection(name='debug', trigger=Trigger.requested(), containers=[{'image': 'busybox:1.36', 'name': 'debug', 'securityContext': restricted}])
chart.injector.webhook_configuration.metadata.add_annotation('argocd.argoproj.io/sync-wave', '1')


def envoy(image):
    return InjectionProps(name='envoy', trigger=Trigger.always(), containers=[{'image': image, 'name': 'envoy', 'securityContext': restricted}])


SidecarInjectorChart(
    app, 'revisions',
    namespace='injector-revisions',
    certificates=WebhookCertificates.generated(store_directory=f'{store}/revisions'),
    revisions=[
        RevisionProps(name='r1', injections=[envoy('envoyproxy/envoy:v1.30.1')]),
        RevisionProps(name='r2', injections=[envoy('envoyproxy/envoy:v1.31.0')]),
    ],
    tags=[
        RevisionTagProps(name='stable', revision='r1', default=True),
        RevisionTagProps(name='canary', revision='r2'),
    ],
    reconciler=ReconcilerProps(missing=MissingAction.RESTART, outdated=OutdatedAction.IN_PLACE, interval_seconds=60),
    monitoring=MonitoringProps(alert_after=Duration.minutes(10), slo=SloProps(objective=0.995), alert_labels={'team': 'platform'}),
)

if 'bad' in sys.argv[1:]:
    SidecarInjectorChart(
        app, 'bad',
        namespace='injector-bad',
        injections=[
            InjectionProps(name='my envoy', trigger=Trigger.always(), containers=[{'image': 'envoyproxy/envoy:v1.31.0', 'name': 'envoy'}]),
            InjectionProps(name='envoy-copy', trigger=Trigger.always(), containers=[{'image': 'envoyproxy/envoy:v1.31.0', 'name': 'envoy'}]),
        ],
    )
app.synth()
