// The props in their JSON form, for TypeScript callers of `cdk8s-sidecar-injector/engine`: every choice
// may also be written in the config's own words (`failurePolicy: 'Fail'`, `trigger: { type: 'always' }`,
// an override as an object, a monitoring duration as `'5m'`), as before the library became a jsii library.
// The constructs are the same classes; only their TypeScript types are widened here. The jsii entry
// (./index.ts) does not reach this file, so none of it is in the assembly.

import type { Duration } from 'cdk8s';
import type { Construct } from 'constructs';
import type { ContainerOverride, InjectionTrigger, LabelSelectorRequirement } from '../webhook/config';
import type { InjectionProps, RevisionProps } from './injection-props';
import type { Override } from './api/override';
import type { LabelSelectorRequirementProps, Trigger } from './api/trigger';
import type { WebhookCertificates } from './certificates/webhook-certificates';
import type { WebhookServer } from './webhook-server';
import { SidecarInjector as JsiiSidecarInjector } from './sidecar-injector';
import type { SidecarInjectorProps } from './sidecar-injector-props';
import { SidecarInjectorChart as JsiiSidecarInjectorChart, SidecarInjectorChartProps } from './sidecar-injector-chart';

/** `T` with every enum also taking its words, every choice class its config JSON, every Duration a Prometheus duration. */
export type JsonForm<T> = T extends Trigger
  ? T | InjectionTrigger
  : T extends Override
    ? T | ContainerOverride
    : T extends Duration
      ? T | string
      : T extends LabelSelectorRequirementProps
        ? T | LabelSelectorRequirement
        : T extends string
          ? T | `${T}`
          : T extends number | boolean | bigint | symbol | null | undefined
            ? T
            : T extends (...args: never[]) => unknown
              ? T
              : T extends WebhookCertificates | WebhookServer
                ? T
                : T extends readonly (infer U)[]
                  ? readonly JsonForm<U>[]
                  : T extends object
                    ? { readonly [K in keyof T]: JsonForm<T[K]> }
                    : T;

/** An injection in the JSON form: the webhook config's `Injection`, or the jsii props, or a mix. */
export type JsonInjectionProps = JsonForm<InjectionProps>;
/** A revision in the JSON form. */
export type JsonRevisionProps = JsonForm<RevisionProps>;
/** SidecarInjectorProps in the JSON form. */
export type SidecarInjectorJsonProps = JsonForm<SidecarInjectorProps>;
/** SidecarInjectorChartProps in the JSON form. */
export type SidecarInjectorChartJsonProps = JsonForm<SidecarInjectorChartProps>;

/** A SidecarInjector as TypeScript sees it through the engine: `addInjection` takes the JSON form too. */
export interface SidecarInjector extends Omit<JsiiSidecarInjector, 'addInjection'> {
  /** Adds an injection, checked as the `injections` prop is. */
  addInjection(injection: JsonInjectionProps): void;
}
/** The SidecarInjector class, its constructor taking the JSON form. */
export const SidecarInjector = JsiiSidecarInjector as unknown as {
  new (scope: Construct, id: string, props?: SidecarInjectorJsonProps): SidecarInjector;
  readonly prototype: SidecarInjector;
};

/** A SidecarInjectorChart as TypeScript sees it through the engine. */
export interface SidecarInjectorChart extends Omit<JsiiSidecarInjectorChart, 'injector'> {
  /** The injector the chart holds. */
  readonly injector: SidecarInjector;
}
/** The SidecarInjectorChart class, its constructor taking the JSON form. */
export const SidecarInjectorChart = JsiiSidecarInjectorChart as unknown as {
  new (scope: Construct, id: string, props?: SidecarInjectorChartJsonProps): SidecarInjectorChart;
  readonly prototype: SidecarInjectorChart;
};
