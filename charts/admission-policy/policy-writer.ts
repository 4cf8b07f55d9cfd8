// One injection as CEL: its conditions (trigger, opt-out, not already injected), the values it binds, and
// the JSONPatch adds that do what the webhook's engine does for it. A run of injections sharing one
// mutation is group-patch.ts. With revisions, the revision recorded beside the status (revisionAdd).

import { ContainerSpec, JsonObject, JsonValue, ResolvedInjection, ResolvedInjectorConfig, TargetKind, annotationKeys, injectionHashEntry, placeholdersIn } from '../../webhook/config';
import type { MatchCondition, Variable } from './admission-policy-types';
import { PlaceholderExpressions, celString, celStringList, celTemplateString, celValue, jsonPointerToken } from './cel-text';
import { withLimitsAtRequests } from '../../webhook/engine/qos';
import { podGuaranteedExpression, podLevelResourcesExpression } from './qos-cel';
import { nonGuaranteedContainers, podLevelUnbalancedContainers } from './mutation-groups';
import { overrideMarks } from './override-cel';
import { bindInOrder, concat, guardedPatch, op, when } from './mutation-text';
import { isObject, mergePatchOps } from './merge-cel';
import { firstIndexExpression, nativeSidecarCondition, readinessGateAdd } from './pod-spec-cel';
import { podBudgets, podLevelAdds, podLevelNames, sharedContainerJson, sharedLimits } from './pod-resources-cel';
import { type ShapeDefinition, TEMPLATE_SHAPES, type TemplateShape } from './template-shapes';


/** The names a mutation binds the pod (template)'s own labels and annotations to (empty maps when it has none). */
const POD_MAPS = { labels: 'podLabels', annotations: 'podAnnotations' } as const;

export function anchored(pattern: string): string {
  return `^(?:${pattern})$`;
}

export class PolicyWriter {
  private readonly shapeDefinition: ShapeDefinition;
  private readonly template: string;
  private readonly pointer: string;
  private readonly keys: { inject: string; status: string; hashes: string; revision: string };

  constructor(
    private readonly injection: ResolvedInjection,
    private readonly config: ResolvedInjectorConfig,
    private readonly shape: TemplateShape,
    /** The kinds the shape's policy matches (a mutation checks the kind when its injection targets fewer). */
    private readonly policyKinds: readonly TargetKind[],
    /**
     * Read the template's labels and annotations alone, as a pod made from it will carry them (not the
     * workload's own beside them): for an injection of pods judged at its workload's admission.
     */
    private readonly podView = false,
  ) {
    this.shapeDefinition = TEMPLATE_SHAPES[shape];
    this.template = this.shapeDefinition.template;
    this.pointer = this.shapeDefinition.pointer;
    this.keys = annotationKeys(config.annotationPrefix);
  }

  /** This injection's own conditions as one CEL condition, on one line, read from the object alone. */
  guardExpression(): string {
    return this.ownConditions().map((condition) => `(${condition.expression})`).join(' && ');
  }

  /**
   * This injection's mutation, as a list of adds in parentheses: its own conditions (kind, status,
   * trigger, placeholders) guard the adds, which are none when they do not hold. A mutation has no
   * match conditions of its own, so each condition is one line of the guard after a `// <name>`
   * comment line: reading the policy (or `mutationGuard()`) still tells which condition kept an
   * injection out.
   */
  patchData(): string {
    return `(${guardedPatch(this.ownConditions(), bindInOrder(this.variables(), 'patch', 'own'))})`;
  }

  /**
   * Whether this injection shares its mutation: it then leaves lists, metadata maps and the status
   * annotation to the mutation, and gives its part, `[content, labels, annotations, applied]`: three
   * lists of adds, and `[[name, name=hash]]` when it adds anything (else `[]`), for the status and the
   * hashes annotation.
   */
  grouped = false;

  /** This injection's part of a shared mutation, all empty when its guard fails. */
  sectionsExpression(): string {
    return guardedPatch(this.ownConditions(true), bindInOrder(this.variables(), 'sections', 'own'), '[[], [], [], []]');
  }

  /** Injections before this one in its shared mutation: their sections' variable and injection. */
  earlier: { variable: string; injection: ResolvedInjection }[] = [];

  /** CEL (with a leading operator, or empty): the sidecars earlier injections of the shared mutation insert first. */
  private earlierFirstInserts(operator: string): string {
    const pattern = celString(`^${this.pointer}/spec/initContainers/[0-9]+$`);
    const counts = this.earlier
      .filter(({ injection }) => (injection.nativeSidecars ?? 'never') !== 'never' && injection.nativeSidecarPosition === 'first')
      .map(({ variable }) => `size(variables.${variable}[0].filter(p, string(p.path).matches(${pattern})))`);
    return counts.length === 0 ? '' : `${operator}${counts.join(' + ')}`;
  }

  /** CEL (` && ...`, or empty): no earlier injection of the shared mutation added a container that is
   * not itself Guaranteed, so the pod's class is still the one computed from the object. */
  private earlierKeptGuaranteed(): string {
    const added = celString(`^${this.pointer}/spec/(containers/-|initContainers/(-|[0-9]+))$`);
    const termsOf = (containers: (injection: ResolvedInjection) => string[]) =>
      this.earlier.flatMap(({ variable, injection }) => {
        const names = containers(injection);
        if (names.length === 0) return [];
        return [`!variables.${variable}[0].exists(p, string(p.path).matches(${added}) && string(p.value.name) in ${celStringList(names)})`];
      });
    const terms = termsOf(nonGuaranteedContainers);
    // A pod with pod-level resources: its class is its own figures', which podResources 'add' raises.
    const podLevelTerms = termsOf(podLevelUnbalancedContainers);
    if (terms.length === 0 && podLevelTerms.length === 0) return '';
    const all = (list: string[]) => (list.length === 0 ? 'true' : list.join(' && '));
    return ` && ((${podLevelResourcesExpression(this.template)}) ? (${all(podLevelTerms)}) : (${all(terms)}))`;
  }

  /** The injection's name. */
  get name(): string {
    return this.injection.name;
  }

  get injectionOf(): ResolvedInjection {
    return this.injection;
  }

  /**
   * The values every injection of a policy computes alike from the object: its name and namespace, the
   * names in the status annotation, the containers those injections added and every container name,
   * the user's containers, and whether the pod is Guaranteed.
   */
  sharedVariables(): Variable[] {
    const t = this.template;
    const inline = this.inlinePlaceholders();
    // `namespace` is a reserved word in CEL, so no variable is called after its placeholder.
    const metadataMap = (map: 'labels' | 'annotations') => `has(${t}.metadata) && has(${t}.metadata.${map}) ? ${t}.metadata.${map} : {}`;
    const vars: Variable[] = [
      { name: 'objectName', expression: inline.name },
      { name: 'objectNamespace', expression: inline.namespace },
      { name: POD_MAPS.labels, expression: metadataMap('labels') },
      { name: POD_MAPS.annotations, expression: metadataMap('annotations') },
      { name: 'statusNames', expression: this.statusNamesExpression() },
    ];
    // Containers that injections listed in the status annotation added: the injector's, not the user's.
    const injectedBy = this.config.injections
      .map((other) => ({ name: other.name, containers: [...(other.containers ?? []), ...(other.initContainers ?? [])].map((c) => c.name) }))
      .filter((other) => other.containers.length > 0)
      .map((other) => `(${celString(other.name)} in variables.statusNames ? ${celStringList(other.containers)} : [])`);
    // Most pods carry no status yet: then none.
    vars.push({ name: 'injectedContainers', expression: injectedBy.length === 0 ? '[]' : `size(variables.statusNames) == 0 ? [] : ${injectedBy.join(' + ')}` });
    vars.push({ name: 'takenContainerNames', expression: `${t}.spec.containers.map(c, c.name) + (has(${t}.spec.initContainers) ? ${t}.spec.initContainers.map(c, c.name) : [])` });
    vars.push({ name: 'userContainers', expression: `size(variables.injectedContainers) == 0 ? ${t}.spec.containers : ${t}.spec.containers.filter(c, !(c.name in variables.injectedContainers))` });
    vars.push({ name: 'podGuaranteed', expression: podGuaranteedExpression(t) });
    return vars;
  }

  /** CEL: the names the status annotation lists now. */
  statusNamesExpression(): string {
    return `${this.templateHas('annotations', this.keys.status, true)} ? ${this.templateValue('annotations', this.keys.status, true)}.split(",").map(s, s.trim()).filter(s, s != "" && s != "true" && s != "false") : []`;
  }

  /** The template's CEL expression and JSON pointer, and the status annotation key. */
  get place(): { template: string; pointer: string; statusKey: string } {
    return { template: this.template, pointer: this.pointer, statusKey: this.keys.status };
  }

  /**
   * The hashes annotation's key and CEL for the entries already there (a list of at most one
   * string), which this injection's `name=hash` entries follow, as the webhook appends them.
   */
  get hashesPlace(): { key: string; existing: string } {
    const value = this.templateValue('annotations', this.keys.hashes, true);
    return { key: this.keys.hashes, existing: `(${this.templateHas('annotations', this.keys.hashes, true)} && ${value} != "" ? [${value}] : [])` };
  }

  /**
   * ` + [the revision annotation's add]` when the config is one revision's: the revision that injected
   * something now, recorded beside the status (replacing one a pod inherited from its workload's
   * template, as the webhook does). '' otherwise.
   */
  get revisionAdd(): string {
    const revision = this.config.revision;
    if (revision === undefined) return '';
    const path = celString(`${this.pointer}/metadata/annotations/${jsonPointerToken(this.keys.revision)}`);
    return ` + [${op(path, celString(revision))}]`;
  }

  // --- metadata reads ----------------------------------------------------------------------------

  /**
   * CEL: the pod template's own map (`labels` or `annotations`) has `key`. `bound`: read from the map
   * the mutation binds (`podLabels`, `podAnnotations`), where the expression is inside its bindings.
   */
  private templateHas(map: 'labels' | 'annotations', key: string, bound = false): string {
    if (bound) return `(${celString(key)} in variables.${POD_MAPS[map]})`;
    return `(has(${this.template}.metadata) && has(${this.template}.metadata.${map}) && ${celString(key)} in ${this.template}.metadata.${map})`;
  }

  private templateValue(map: 'labels' | 'annotations', key: string, bound = false): string {
    return bound ? `variables.${POD_MAPS[map]}[${celString(key)}]` : `${this.template}.metadata.${map}[${celString(key)}]`;
  }

  /**
   * CEL: the pod (template)'s `map` has `key`. A workload's own metadata and its pod template's both
   * count; the template's wins on a clash. `inShared`: inside the shared mutation's bindings, where a
   * key an earlier injection of it adds to the template counts as the template's (`readThrough`), as
   * the webhook's next trigger sees it.
   */
  private mergedHas(map: 'labels' | 'annotations', key: string, inShared = false, readThrough = inShared): string {
    const added = readThrough ? this.earlierAdd(map, key) : undefined;
    const template = added ? `(${this.templateHas(map, key, inShared)} || ${added.has})` : this.templateHas(map, key, inShared);
    if (this.shape === 'pods' || this.podView) return template;
    return `(${template} || (has(object.metadata.${map}) && ${celString(key)} in object.metadata.${map}))`;
  }

  private mergedValue(map: 'labels' | 'annotations', key: string, inShared = false, readThrough = inShared): string {
    const added = readThrough ? this.earlierAdd(map, key) : undefined;
    const has = this.templateHas(map, key, inShared);
    const value = this.templateValue(map, key, inShared);
    const own = this.shape === 'pods' || this.podView ? undefined : `object.metadata.${map}[${celString(key)}]`;
    if (!added) return own === undefined ? value : `(${has} ? ${value} : ${own})`;
    const otherwise = own === undefined ? added.value : `(${added.has} ? ${added.value} : ${own})`;
    return `(${has} ? ${value} : ${otherwise})`;
  }

  /**
   * CEL reading the part of the earlier injection of the shared mutation that adds `key` to the
   * template's `map` (at most one does: mutation-groups.ts): whether it adds it (it does when its guard
   * held and the template lacks the key), and the value it adds.
   */
  private earlierAdd(map: 'labels' | 'annotations', key: string): { has: string; value: string } | undefined {
    const adder = this.earlier.find(({ injection }) => key in (injection[map] ?? {}));
    if (!adder) return undefined;
    const adds = `variables.${adder.variable}[${map === 'labels' ? 1 : 2}]`;
    const pointer = celString(`${this.pointer}/metadata/${map}/${jsonPointerToken(key)}`);
    return { has: `${adds}.exists(p, string(p.path) == ${pointer})`, value: `string(${adds}.filter(p, string(p.path) == ${pointer})[0].value)` };
  }

  // --- conditions --------------------------------------------------------------------------------

  /**
   * Placeholder values as expressions that need no variables (matchConditions cannot read them);
   * `inShared`: inside the mutation's bindings, reading the object's name and namespace it binds, and
   * the trigger annotation as the shared mutation's earlier injections leave it.
   */
  private inlinePlaceholders(inShared = false): PlaceholderExpressions {
    return {
      name: inShared
        ? 'string(variables.objectName)'
        : 'string(has(object.metadata.name) && object.metadata.name != "" ? object.metadata.name : (has(object.metadata.generateName) ? object.metadata.generateName : ""))',
      namespace: inShared ? 'string(variables.objectNamespace)' : 'string(request.namespace != "" ? request.namespace : (has(object.metadata.namespace) ? object.metadata.namespace : ""))',
      annotation: this.injection.trigger.type === 'annotation' ? `string(${this.mergedValue('annotations', this.injection.trigger.key, inShared)})` : '""',
    };
  }

  /** The policy's match conditions: the same for every injection of the shape. */
  sharedConditions(): MatchCondition[] {
    const inject = this.keys.inject;
    return [
      { name: 'pod-spec-present', expression: this.shapeDefinition.present },
      {
        name: 'not-opted-out',
        expression: `!(${this.mergedHas('annotations', inject)} && ${this.mergedValue('annotations', inject)}.trim().lowerAscii() == "false")`,
      },
    ];
  }

  /**
   * What must hold for this injection in particular, each with a name. `inShared`: inside its shared
   * mutation, reading the values it binds (the status names, the pod's labels and annotations), and
   * where the trigger also sees the labels and annotations earlier injections of it add.
   */
  ownConditions(inShared = false): MatchCondition[] {
    const conditions: MatchCondition[] = [];
    const kinds = this.shapeDefinition.kinds.filter((kind) => this.injection.targetKinds.includes(kind));
    if (kinds.length < this.policyKinds.length) {
      conditions.push({ name: 'target-kind', expression: `request.kind.kind in ${celStringList(kinds)}` });
    }
    conditions.push({
      name: 'not-already-injected',
      // The names as the webhook reads them ("true" and "false" are none).
      expression: inShared
        ? `!(${celString(this.injection.name)} in variables.statusNames)`
        : `!(${this.templateHas('annotations', this.keys.status)} && ${this.templateValue('annotations', this.keys.status)}.split(",").exists(s, s.trim() == ${celString(this.injection.name)}))`,
    });
    const trigger = this.triggerCondition(inShared);
    if (trigger !== undefined) conditions.push({ name: 'trigger', expression: trigger });
    const placeholders = this.placeholderCondition(inShared);
    if (placeholders !== undefined) conditions.push({ name: 'placeholders-have-values', expression: placeholders });
    return conditions;
  }

  /** The trigger as a CEL condition; undefined for `always`. */
  triggerCondition(inShared = false): string | undefined {
    const trigger = this.injection.trigger;
    switch (trigger.type) {
      case 'always':
        return undefined;
      case 'requested': {
        // "true" asks for nothing in particular and "false" is the opt-out, so neither names an injection.
        if (this.injection.name === 'true' || this.injection.name === 'false') return 'false';
        // Read from the object as admitted, never through: the webhook reads <prefix>/inject once.
        const inject = this.keys.inject;
        return `${this.mergedHas('annotations', inject, inShared, false)} && ${this.mergedValue('annotations', inject, inShared, false)}.split(",").exists(s, s.trim() == ${celString(this.injection.name)})`;
      }
      case 'annotation': {
        const present = this.mergedHas('annotations', trigger.key, inShared);
        if (trigger.valuePattern === undefined) return present;
        return `${present} && ${this.mergedValue('annotations', trigger.key, inShared)}.matches(${celString(anchored(trigger.valuePattern))})`;
      }
      case 'labelSelector': {
        const terms: string[] = [];
        for (const [key, value] of Object.entries(trigger.matchLabels ?? {})) {
          terms.push(`(${this.mergedHas('labels', key, inShared)} && ${this.mergedValue('labels', key, inShared)} == ${celString(value)})`);
        }
        for (const requirement of trigger.matchExpressions ?? []) {
          const has = this.mergedHas('labels', requirement.key, inShared);
          const valueIn = `${this.mergedValue('labels', requirement.key, inShared)} in ${celStringList(requirement.values ?? [])}`;
          switch (requirement.operator) {
            case 'In':
              terms.push(`(${has} && ${valueIn})`);
              break;
            case 'NotIn':
              terms.push(`!(${has} && ${valueIn})`);
              break;
            case 'Exists':
              terms.push(has);
              break;
            case 'DoesNotExist':
              terms.push(`!${has}`);
              break;
          }
        }
        return terms.length === 0 ? 'true' : terms.join(' && ');
      }
    }
  }

  /** A placeholder with an empty value skips the injection, as does a label it would make invalid. */
  private placeholderCondition(inShared: boolean): string | undefined {
    const used = new Set<string>();
    const visit = (value: unknown): void => {
      if (typeof value === 'string') placeholdersIn(value).forEach((name) => used.add(name));
      else if (Array.isArray(value)) value.forEach(visit);
      else if (isObject(value)) Object.values(value).forEach(visit);
    };
    const injection = this.injection;
    for (const field of ['containers', 'initContainers', 'volumes', 'volumeMounts', 'env', 'imagePullSecrets', 'labels', 'annotations', 'merges'] as const) {
      visit(injection[field]);
    }
    if (used.size === 0) return undefined;
    const inline = this.inlinePlaceholders(inShared);
    const terms = [...used].sort().map((name) => `${inline[name as keyof PlaceholderExpressions]} != ""`);
    for (const value of Object.values(injection.labels ?? {})) {
      if (!value.includes('{{')) continue;
      const rendered = celTemplateString(value, inline);
      terms.push(`size(${rendered}) <= 63 && (${rendered}).matches("^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")`);
    }
    return terms.join(' && ');
  }

  // --- variables: what to add, as plain data --------------------------------------------------------

  private variables(): Variable[] {
    const t = this.template;
    const injection = this.injection;
    const vars: Variable[] = [];
    const add = (name: string, expression: string) => vars.push({ name, expression });
    // `namespace` is a reserved word in CEL, so no variable is called after its placeholder.
    // What every injection of a shared mutation reads alike is bound once, by the mutation.
    if (!this.grouped) vars.push(...this.sharedVariables());
    if (injection.trigger.type === 'annotation') add('triggerValue', this.inlinePlaceholders(true).annotation);
    const placeholders: PlaceholderExpressions = { name: 'string(variables.objectName)', namespace: 'string(variables.objectNamespace)', annotation: 'string(variables.triggerValue)' };
    const value = (json: unknown) => celValue(json as JsonValue, placeholders);


    const contentOps: string[] = [];
    // Containers, init containers, volumes and pull secrets: appended, never replacing the user's own.
    const listAdditions: { field: 'containers' | 'initContainers' | 'volumes' | 'imagePullSecrets'; variable: string; taken: (name: string) => string }[] = [
      { field: 'containers', variable: 'addContainers', taken: (name) => `${celString(name)} in variables.takenContainerNames` },
      { field: 'initContainers', variable: 'addInitContainers', taken: (name) => `${celString(name)} in variables.takenContainerNames` },
      { field: 'volumes', variable: 'addVolumes', taken: (name) => `(has(${t}.spec.volumes) && ${t}.spec.volumes.exists(v, v.name == ${celString(name)}))` },
      { field: 'imagePullSecrets', variable: 'addImagePullSecrets', taken: (name) => `(has(${t}.spec.imagePullSecrets) && ${t}.spec.imagePullSecrets.exists(s, s.name == ${celString(name)}))` },
    ];
    // Native sidecars: the injection's containers, as init containers with restartPolicy Always,
    // in the pods that `nativeSidecars` names; appended before the injection's own init containers.
    const native = nativeSidecarCondition(this.injection, this.shape);
    if (native !== 'false') add('nativeSidecars', native);
    const first = native !== 'false' && injection.nativeSidecarPosition === 'first';
    // qos 'preserve-guaranteed': in a Guaranteed pod, the injected containers' limits are their requests.
    const preserve = injection.qos === 'preserve-guaranteed';
    if (preserve) add('guaranteed', `variables.podGuaranteed${this.earlierKeptGuaranteed()}`);
    const asNative = (item: object) => ({ ...item, restartPolicy: 'Always' });
    // Overrides: each offered field's value chosen from the pod's and the namespace's annotations
    // (override-cel.ts), read from the object as admitted, not from what earlier injections add.
    const podReads = { has: (key: string) => this.mergedHas('annotations', key, true, false), value: (key: string) => this.mergedValue('annotations', key, true, false) };
    const bound = new Set<string>();
    const bind = (name: string, expression: string) => {
      if (!bound.has(name)) add(name, expression);
      bound.add(name);
      return `variables.${name}`;
    };
    // podResources: which pod-level figures this injection's containers can change (known at synth).
    const podPolicy = injection.podResources ?? 'add';
    const podLevel = podLevelNames(injection);
    const shareNames = podPolicy === 'share' ? (['cpu', 'memory'] as const).filter((name) => podLevel.includes(name)) : [];
    for (const name of shareNames) add(`budgets_${name}`, podBudgets(t, name));
    const containerValue = (item: object, transform: (item: object) => object) => {
      const marks = overrideMarks(injection, item as ContainerSpec, podReads, bind);
      const render = (json: object) => {
        const text = shareNames.length > 0 ? sharedLimits(value(json), t) : value(json);
        return marks ? marks.replace(text) : text;
      };
      const source = marks ? marks.item : item;
      const plain = render(transform(source));
      const limited = preserve ? render(transform(withLimitsAtRequests(source as JsonObject))) : plain;
      const standard = limited === plain ? `dyn(${plain})` : `(variables.guaranteed ? dyn(${limited}) : dyn(${plain}))`;
      // share: in a pod that budgets cpu or memory, the container as it fits inside (no QoS rewrite:
      // the pod-level figures, which decide the class, do not change).
      const subsets = shareNames.length === 2 ? [['cpu', 'memory'], ['cpu'], ['memory']] : shareNames.map((name) => [name]);
      return subsets.reduceRight((otherwise, subset) => {
        const condition = shareNames.map((name) => `${subset.includes(name) ? '' : '!'}variables.budgets_${name}`).join(' && ');
        return `(${condition} ? dyn(${render(transform(sharedContainerJson(source as Record<string, unknown>, subset as ('cpu' | 'memory')[])))}) : ${otherwise})`;
      }, standard);
    };
    for (const { field, variable, taken } of listAdditions) {
      const items = (injection[field] ?? []) as readonly { name: string }[];
      const isContainer = field === 'containers' || field === 'initContainers';
      /** Each item's add condition and value. */
      const itemAdds = (list: readonly { name: string }[], condition: string, transform: (item: object) => object = (item) => item) =>
        list.map((item) => ({ condition: `${condition}!(${taken(item.name)})`, value: isContainer ? containerValue(item, transform) : `dyn(${value(item)})` }));
      const itemList = (adds: readonly { condition: string; value: string }[]) => adds.map(({ condition, value: item }) => when(condition, item));
      // In a shared mutation the list exists when the items are appended (the mutation makes it): each
      // item is its own add.
      const itemOps = (adds: readonly { condition: string; value: string }[], pointer: string) => adds.map(({ condition, value: item }) => when(condition, op(pointer, item)));
      const adds: { condition: string; value: string }[] = [];
      const listPointer = celString(`${this.pointer}/spec/${field}`);
      const appendPointer = celString(`${this.pointer}/spec/${field}/-`);
      // Always native sidecars: no regular container at all.
      if (field === 'containers') adds.push(...(native === 'true' ? [] : itemAdds(items, native === 'false' ? '' : '!variables.nativeSidecars && ')));
      else if (field === 'initContainers') {
        if (first) {
          // Before the pod's own init containers, after those of earlier injections placed first (as
          // the webhook places every such sidecar of one admission): inserted one by one at the same
          // index, so in reverse order.
          const sidecars = itemAdds([...(injection.containers ?? [])].reverse(), 'variables.nativeSidecars && ', asNative);
          const inserts = this.earlierFirstInserts(' + ');
          add('firstIndex', inserts === '' ? firstIndexExpression(this.template, this.config, this.injection) : `(${firstIndexExpression(this.template, this.config, this.injection)})${inserts}`);
          const firstPointer = `${celString(`${this.pointer}/spec/${field}/`)} + string(variables.firstIndex)`;
          if (this.grouped) {
            contentOps.push(...itemOps(itemAdds(items, ''), appendPointer), ...itemOps(sidecars, firstPointer));
            continue;
          }
          add('addFirstInitContainers', concat(itemList(sidecars)));
          add(variable, concat(itemList(itemAdds(items, ''))));
          contentOps.push(
            `(size(variables.addFirstInitContainers) + size(variables.${variable}) == 0 ? [] : ` +
              `(has(${t}.spec.${field}) ? variables.${variable}.map(item, ${op(appendPointer, 'item')}) : [${op(listPointer, `variables.${variable}`)}]) + ` +
              `variables.addFirstInitContainers.map(item, ${op(firstPointer, 'item')}))`,
          );
          continue;
        }
        if (native !== 'false') adds.push(...itemAdds(injection.containers ?? [], 'variables.nativeSidecars && ', asNative));
        adds.push(...itemAdds(items, ''));
      } else adds.push(...itemAdds(items, ''));
      if (adds.length === 0) continue;
      if (this.grouped) {
        contentOps.push(...itemOps(adds, appendPointer));
        continue;
      }
      add(variable, concat(itemList(adds)));
      contentOps.push(`(size(variables.${variable}) == 0 ? [] : (has(${t}.spec.${field}) ? variables.${variable}.map(item, ${op(appendPointer, 'item')}) : [${op(listPointer, `variables.${variable}`)}]))`);
    }

    // Env vars and mounts: into each of the user's containers, skipping names (mount paths) it has.
    // Init containers shift by the sidecars that injections earlier in a shared mutation insert first.
    // A container's index: its name's first place among the container names (taken names start with them).
    const containerPointer = (list: 'containers' | 'initContainers', c: string) =>
      list === 'containers'
        ? `${celString(`${this.pointer}/spec/containers/`)} + string(variables.takenContainerNames.indexOf(${c}.name))`
        : `${celString(`${this.pointer}/spec/initContainers/`)} + string(${t}.spec.initContainers.map(x, x.name).indexOf(${c}.name)${this.earlierFirstInserts(' + ')})`;
    for (const [field, key] of [['env', 'name'], ['volumeMounts', 'mountPath']] as const) {
      const items = (injection[field] ?? []) as readonly Record<string, unknown>[];
      if (items.length === 0) continue;
      contentOps.push(`variables.userContainers.filter(c, !has(c.${field})).map(c, ${op(`${containerPointer('containers', 'c')} + "/${field}"`, value(items))})`);
      for (const item of items) {
        const id = celString(item[key] as string);
        contentOps.push(
          `variables.userContainers.filter(c, has(c.${field}) && !c.${field}.exists(x, x.${key} == ${id})).map(c, ${op(`${containerPointer('containers', 'c')} + "/${field}/-"`, value(item))})`,
        );
      }
    }

    // Merges: fields set inside the user's containers (and init containers) of the given names.
    (injection.merges ?? []).forEach((merge) => {
      for (const list of ['containers', 'initContainers'] as const) {
        contentOps.push(...mergePatchOps(this.template, merge, list, containerPointer, value));
      }
    });
    add('contentPatch', concat(contentOps));
    // podResources 'add' (and hugepages under 'share'): each pod-level figure the pod sets, raised by the
    // containers this injection adds now, read back from its own adds (pod-resources-cel.ts).
    const summed = podLevel.filter((name) => podPolicy === 'add' || (name !== 'cpu' && name !== 'memory'));
    let content = 'variables.contentPatch';
    if (summed.length > 0) {
      const items = [...(injection.containers ?? []), ...(injection.initContainers ?? [])];
      const one = celString(`^${this.pointer}/spec/(containers|initContainers)/(-|[0-9]+)$`);
      const lists = celString(`^${this.pointer}/spec/(containers|initContainers)$`);
      // A list made whole (the pod had none) holds several; there are at most two such adds.
      const made = `variables.contentPatch.filter(p, string(p.path).matches(${lists}))`;
      add('podLevelAdded', `variables.contentPatch.filter(p, string(p.path).matches(${one})).map(p, p.value) + [${made}].map(l, (size(l) > 0 ? l[0].value : []) + (size(l) > 1 ? l[1].value : []))[0]`);
      const earlier = this.earlier.filter((part) => podLevelNames(part.injection).length > 0).map((part) => `variables.${part.variable}[0]`);
      const base = (field: 'requests' | 'limits', name: string, path: string) => {
        const own = `quantity(string(${t}.spec.resources.${field}[${celString(name)}]))`;
        if (earlier.length === 0) return own;
        // An earlier part of the shared mutation raised it already: from there (its add is applied before this one's).
        return `[(${earlier.join(' + ')}).filter(plp, string(plp.path) == ${path})].map(ple, size(ple) > 0 ? quantity(string(ple[size(ple) - 1].value)) : ${own})[0]`;
      };
      add('podLevelPatch', `!has(${t}.spec.resources) ? [] : ${podLevelAdds(t, this.pointer, 'variables.podLevelAdded', summed, base, items.length)}`);
      content = 'variables.contentPatch + variables.podLevelPatch';
    }

    // Labels and annotations on the pod (template); a key already there keeps its value.
    for (const [map, variable] of [['labels', 'labelPatch'], ['annotations', 'annotationPatch']] as const) {
      const entries = Object.entries(injection[map] ?? {});
      add(
        variable,
        concat(entries.map(([key, text]) => when(`!${this.templateHas(map, key, true)}`, op(celString(`${this.pointer}/metadata/${map}/${jsonPointerToken(key)}`), value(text))))),
      );
    }
    // The readiness gate, once, when the injection changes anything (as the webhook adds it for an
    // injection applied now). An injection with the gate never shares a mutation with another one that
    // has it (mutation-groups.ts), so each sees the gates earlier mutations added and reads the pod's
    // own from the object; it makes the list when the pod has none (in a shared mutation too, where no
    // other injection appends to it).
    const gate = injection.readinessGate === true ? readinessGateAdd(this.template, this.pointer, this.config.annotationPrefix) : undefined;
    const changed = 'size(variables.contentPatch) + size(variables.labelPatch) + size(variables.annotationPatch) > 0';
    if (this.grouped) {
      if (gate) add('changed', changed);
      const applied = `${gate ? 'variables.changed' : changed} ? [${celStringList([injection.name, injectionHashEntry(injection)])}] : []`;
      const contentAll = gate ? `${content} + (!variables.changed || ${gate.present} ? [] : [${gate.add}])` : content;
      // Lists of maps and of lists of strings: each dyn, as literals must be homogeneous.
      add('sections', `[dyn(${contentAll}), dyn(variables.labelPatch), dyn(variables.annotationPatch), dyn(${applied})]`);
      return vars;
    }
    add('changed', changed);
    const contentAll = gate ? `${content} + (${gate.present} ? [] : [${gate.add}])` : content;
    const metadata = `${this.pointer}/metadata`;
    const ensureMetadata = [
      when(`!has(${t}.metadata)`, op(celString(metadata), '{}')),
      when(`size(variables.labelPatch) > 0 && !(has(${t}.metadata) && has(${t}.metadata.labels))`, op(celString(`${metadata}/labels`), '{}')),
      when(`!(has(${t}.metadata) && has(${t}.metadata.annotations))`, op(celString(`${metadata}/annotations`), '{}')),
    ];
    const status = op(celString(`${metadata}/annotations/${jsonPointerToken(this.keys.status)}`), `(variables.statusNames + [${celString(injection.name)}]).join(",")`);
    // The injection's hash as configured, computed at synth: appended as the webhook appends it.
    const hashes = this.templateValue('annotations', this.keys.hashes, true);
    const hashesValue = `(${this.templateHas('annotations', this.keys.hashes, true)} && ${hashes} != "" ? ${hashes} + "," : "") + ${celString(injectionHashEntry(injection))}`;
    const hashesOp = op(celString(`${metadata}/annotations/${jsonPointerToken(this.keys.hashes)}`), hashesValue);
    add(
      'patch',
      `!variables.changed ? [] : ${contentAll} + ${ensureMetadata.join(' + ')} + variables.labelPatch + variables.annotationPatch + [${status}, ${hashesOp}]${this.revisionAdd}`,
    );
    return vars;
  }
}
