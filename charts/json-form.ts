// The JSON form of a props type: every choice may also be written in the config's own words
// (`failurePolicy: 'Fail'`, `trigger: { type: 'always' }`, an override as an object, a monitoring duration
// as `'5m'`), as TypeScript callers wrote the props before the library became a jsii library. Types only.

import type { Duration } from 'cdk8s';
import type { ContainerOverride, InjectionTrigger, LabelSelectorRequirement } from '../webhook/config';
import type { WorkloadOverride } from './api/override';
import type { LabelSelectorRequirementProps, Trigger } from './api/trigger';

/** `T` with every enum also taking its words, every choice class its config JSON, every Duration a Prometheus duration. */
export type JsonForm<T> = T extends Trigger
  ? T | InjectionTrigger
  : T extends WorkloadOverride
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
              : T extends readonly (infer U)[]
                ? readonly JsonForm<U>[]
                : T extends object
                  ? { readonly [K in keyof T]: JsonForm<T[K]> }
                  : T;
