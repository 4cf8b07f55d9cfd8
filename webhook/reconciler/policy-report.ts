// One wgpolicyk8s.io/v1alpha2 PolicyReport per namespace, where that CRD is installed (Kyverno,
// the Policy Reporter UI and others read it): a result per workload with the counts `status -o json`
// gives it, and a summary of the namespace's pods as `status` counts them. Made from the same
// StatusReport `status` prints, so the two cannot disagree. A report holds at most MAX_RESULTS results
// (an object must fit etcd's 1.5 MiB); the summary always counts every pod.

import { createHash } from 'node:crypto';
import { RECONCILER_WRITES } from '../config';
import type { KubernetesObject } from '../engine/admission-review';
import type { PodStatus } from '../fleet/injection-status';
import type { StatusReport, WorkloadStatus } from '../fleet/status-report';
import { type KubeApi, isNotFound } from '../kube-client/kube-api';
import { staleCount } from './repair-decision';
import { workloadApiVersion } from './workload-name';

export const POLICY_REPORT_API = '/apis/wgpolicyk8s.io/v1alpha2';
/** The report's name in each namespace, and the `policy` of its results. */
export const POLICY_REPORT_NAME = RECONCILER_WRITES.policyReportName;
export const MAX_RESULTS = 1000;
/** The label on every report the reconciler writes, and the selector it lists them by. */
const MANAGED_BY = RECONCILER_WRITES.policyReportLabels;
export const POLICY_REPORT_SELECTOR = Object.entries(MANAGED_BY).map(([key, value]) => `${key}=${value}`).join(',');

/** What a workload's pods are, as one result: fail when some pod is stale, warn when only versions are unknown. */
function resultOf(workload: WorkloadStatus): 'pass' | 'fail' | 'warn' {
  if (staleCount(workload) > 0) return 'fail';
  return workload.versionUnknown > 0 || (workload.audit ?? 0) > 0 ? 'warn' : 'pass';
}

function messageOf(workload: WorkloadStatus): string {
  if (workload.findings.length === 0 && (workload.unservedRevision ?? 0) === 0) return `all ${workload.pods} pods carry their injections as configured`;
  const findings = workload.findings.map((finding) =>
    finding.state === 'audit'
      ? `${finding.injection} (audit mode) would be added to ${finding.pods.length} pod${finding.pods.length === 1 ? '' : 's'}`
      : `${finding.injection} ${finding.state} in ${finding.pods.length} pod${finding.pods.length === 1 ? '' : 's'}`,
  );
  if (workload.unservedRevision) findings.push(`${workload.unservedRevision} pods label a revision that is not served`);
  return findings.join('; ');
}

/** The namespace's PolicyReport, from its pods' statuses and the StatusReport of exactly those pods. */
export function policyReport(namespace: string, pods: readonly PodStatus[], report: StatusReport, now: number): KubernetesObject {
  const timestamp = { seconds: Math.floor(now / 1000), nanos: 0 };
  const results = report.workloads.slice(0, MAX_RESULTS).map((workload) => {
    const apiVersion = workloadApiVersion(workload);
    return {
      source: POLICY_REPORT_NAME,
      policy: POLICY_REPORT_NAME,
      rule: 'injections-up-to-date',
      result: resultOf(workload),
      scored: true,
      message: messageOf(workload),
      timestamp,
      resources: [{ ...(apiVersion !== undefined ? { apiVersion } : {}), kind: workload.kind, name: workload.name, namespace }],
      properties: {
        pods: String(workload.pods),
        upToDate: String(workload.upToDate),
        outdated: String(workload.outdated),
        missing: String(workload.missing),
        noLongerConfigured: String(workload.noLongerConfigured),
        versionUnknown: String(workload.versionUnknown),
        ...(workload.audit !== undefined ? { audit: String(workload.audit) } : {}),
      },
    };
  });
  const count = (state: PodStatus['state']) => pods.filter((pod) => pod.state === state).length;
  const auditOnly = pods.filter((pod) => pod.state === 'none' && pod.injections.some((injection) => injection.state === 'audit')).length;
  return {
    apiVersion: 'wgpolicyk8s.io/v1alpha2',
    kind: 'PolicyReport',
    metadata: { name: POLICY_REPORT_NAME, namespace, labels: { ...MANAGED_BY } },
    // Pods, as `status` counts them: up to date, stale (missing, outdated, no longer configured, an
    // unserved revision), and warn: versions unknown, or only an injection in audit mode would change
    // them. Pods that have and owe no injection are not counted.
    summary: { pass: count('up-to-date'), fail: count('stale'), warn: count('version-unknown') + auditOnly, error: 0, skip: 0 },
    results,
  } as KubernetesObject;
}

/** Whether the cluster serves PolicyReports (the CRD is installed). */
export async function policyReportsServed(api: KubeApi): Promise<boolean> {
  try {
    const resources = await api.request('GET', POLICY_REPORT_API);
    return Array.isArray(resources?.resources) && resources.resources.some((resource: any) => resource?.name === 'policyreports');
  } catch (error) {
    if (isNotFound(error)) return false;
    throw error;
  }
}

/** What a report says, without its timestamps: equal texts need no write. */
function reportContent(report: KubernetesObject): string {
  const results = (((report as any).results ?? []) as any[]).map(({ timestamp: _timestamp, ...result }) => result);
  return JSON.stringify({ summary: (report as any).summary, results });
}

/** The most namespaces whose last written report is remembered (a hash each); past it, they are read back. */
export const MAX_REMEMBERED_REPORTS = 8192;

/**
 * Writes each namespace's report when what it says changed: a pass every 30 s over a thousand
 * namespaces would otherwise write 33 reports a second that say nothing new. What was written is
 * remembered as a hash per namespace (bounded); a namespace with no workload to report is written
 * only when it had a report before (then emptied: the reconciler may not delete), which is also how a
 * namespace whose pods are all gone has its report emptied.
 */
export class PolicyReportWriter {
  private readonly written = new Map<string, string>();

  constructor(private readonly api: KubeApi) {}

  /** Whether a write went out. */
  async write(report: KubernetesObject): Promise<boolean> {
    const namespace = String((report.metadata as any).namespace);
    const text = reportContent(report);
    const content = createHash('sha256').update(text).digest('base64');
    if (this.written.get(namespace) === content) return false;
    const collection = `${POLICY_REPORT_API}/namespaces/${namespace}/policyreports`;
    let existing: any;
    try {
      existing = await this.api.request('GET', `${collection}/${POLICY_REPORT_NAME}`);
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
    let wrote = false;
    if (existing === undefined) {
      if (((report as any).results ?? []).length > 0) {
        await this.api.request('POST', collection, { body: report });
        wrote = true;
      }
    } else if (reportContent(existing) !== text) {
      const metadata = { ...(report.metadata as Record<string, unknown>), resourceVersion: existing?.metadata?.resourceVersion };
      await this.api.request('PUT', `${collection}/${POLICY_REPORT_NAME}`, { body: { ...report, metadata } });
      wrote = true;
    }
    this.remember(namespace, content);
    return wrote;
  }

  private remember(namespace: string, content: string): void {
    this.written.delete(namespace);
    if (this.written.size >= MAX_REMEMBERED_REPORTS) this.written.delete(this.written.keys().next().value as string);
    this.written.set(namespace, content);
  }
}
