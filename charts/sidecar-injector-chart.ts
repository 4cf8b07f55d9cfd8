import { Chart, ChartProps } from 'cdk8s';
import { Construct } from 'constructs';
import { SidecarInjector, SidecarInjectorProps } from './sidecar-injector';

/** Props of a SidecarInjectorChart: the injector's props, and labels for the whole chart. */
export interface SidecarInjectorChartProps extends SidecarInjectorProps {
  /** Labels on every object of the chart. @default none */
  readonly chartLabels?: ChartProps['labels'];
}

/** A chart holding one SidecarInjector: one YAML file with everything the webhook needs. */
export class SidecarInjectorChart extends Chart {
  /** The injector the chart holds: its objects, config and `addInjection()`. */
  readonly injector: SidecarInjector;

  constructor(scope: Construct, id: string, props: SidecarInjectorChartProps = {}) {
    // No chart namespace: the MutatingWebhookConfiguration is cluster-scoped; the construct
    // sets the namespace on each namespaced object itself.
    super(scope, id, { labels: props.chartLabels });
    this.injector = new SidecarInjector(this, 'SidecarInjector', props);
  }
}
