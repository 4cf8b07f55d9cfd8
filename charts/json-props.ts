// The constructs as TypeScript callers of `cdk8s-sidecar-injector/engine` see them: the same classes, their
// props typed to take the JSON form (./json-form.ts) as well as the jsii one. The jsii entry (./index.ts) does
// not reach this file, so none of it is in the assembly.

import type { Construct } from 'constructs';
import type { ResolvedInjectorConfig } from '../webhook/config';
import type { InjectionProps, RevisionProps } from './injection-props';
import type { JsonForm } from './json-form';
import { SidecarInjector as JsiiSidecarInjector } from './sidecar-injector';
import type { SidecarInjectorProps } from './sidecar-injector-props';
import { SidecarInjectorChart as JsiiSidecarInjectorChart, SidecarInjectorChartProps } from './sidecar-injector-chart';

/** An injection in the JSON form: the webhook config's `Injection`, or the jsii props, or a mix. */
export type JsonInjectionProps = JsonForm<InjectionProps>;
/** A revision in the JSON form. */
export type JsonRevisionProps = JsonForm<RevisionProps>;
/** SidecarInjectorProps in the JSON form. */
export type SidecarInjectorJsonProps = JsonForm<SidecarInjectorProps>;
/** SidecarInjectorChartProps in the JSON form. */
export type SidecarInjectorChartJsonProps = JsonForm<SidecarInjectorChartProps>;

/** A SidecarInjector as TypeScript sees it through the engine: `addInjection` takes the JSON form too. */
export interface SidecarInjector extends Omit<JsiiSidecarInjector, 'addInjection' | 'config' | 'webhookConfig'> {
  /** Adds an injection, checked as the `injections` prop is. */
  addInjection(injection: JsonInjectionProps): void;
  /** The config as the webhook loads it: validated, defaults filled in. */
  readonly config: ResolvedInjectorConfig;
  /** The config the webhook loads: every injection, or with `both-where-possible` those no policy applies. */
  readonly webhookConfig: ResolvedInjectorConfig;
}
/** The SidecarInjector class, its constructor taking the JSON form. */
export const SidecarInjector = JsiiSidecarInjector as unknown as {
  /** A SidecarInjector with these props, in the JSON form or the jsii one. */
  new (scope: Construct, id: string, props?: SidecarInjectorJsonProps): SidecarInjector;
  /** The class's prototype, for `instanceof`. */
  readonly prototype: SidecarInjector;
};

/** A SidecarInjectorChart as TypeScript sees it through the engine. */
export interface SidecarInjectorChart extends Omit<JsiiSidecarInjectorChart, 'injector'> {
  /** The injector the chart holds. */
  readonly injector: SidecarInjector;
}
/** The SidecarInjectorChart class, its constructor taking the JSON form. */
export const SidecarInjectorChart = JsiiSidecarInjectorChart as unknown as {
  /** A chart holding one SidecarInjector with these props, in the JSON form or the jsii one. */
  new (scope: Construct, id: string, props?: SidecarInjectorChartJsonProps): SidecarInjectorChart;
  /** The class's prototype, for `instanceof`. */
  readonly prototype: SidecarInjectorChart;
};
