// `status`: the fleet's status report (fleet/status-report.ts) for people, a table and what is stale;
// `--output json` prints the report itself. The exit code is the report's verdict, unless an injected
// volume's source is missing.

import type { Finding, StatusReport, WorkloadStatus } from '../fleet/status-report';

/**
 * An injected volume's ConfigMap, Secret or PersistentVolumeClaim is missing in a namespace where pods
 * carry it: those pods cannot start (wins over every other state).
 */
export const EXIT_STATUS_VOLUME_SOURCE_MISSING = 8;

function table(rows: readonly string[][]): string[] {
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
  return rows.map((row) => row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]))).join('  ').trimEnd());
}

/** `r1`, or `r1 -> r2` when its pods run another revision than the one they should now. */
function revisionCell(workload: WorkloadStatus): string {
  const running = workload.revisions?.running.join('+') || '-';
  const chosen = workload.revisions?.chosen.join('+') || '-';
  return running === chosen ? running : `${running} -> ${chosen}`;
}

function describeFinding(finding: Finding): string {
  const pods = `${finding.pods.length} pod${finding.pods.length === 1 ? '' : 's'}`;
  switch (finding.state) {
    case 'outdated':
      return `${finding.injection}: outdated in ${pods} (pod has ${finding.podHash}, configured now ${finding.configuredHash})`;
    case 'missing':
      return `${finding.injection}: missing from ${pods} (configured ${finding.configuredHash}; admitted without it)`;
    case 'no-longer-configured':
      return `${finding.injection}: no longer configured, still in ${pods}${finding.podHash ? ` (pod has ${finding.podHash})` : ''}`;
    case 'version-unknown':
      return `${finding.injection}: version unknown in ${pods} (injected by a version that recorded no hash; configured now ${finding.configuredHash})`;
    case 'audit':
      return `${finding.injection}: audit mode, would be added to ${pods} (configured ${finding.configuredHash}; nothing added)`;
  }
}

/** The human-readable report. */
export function formatStatus(report: StatusReport, sourceDescription: string): string {
  const hashes = (injections: readonly { name: string; hash: string }[]) => injections.map((injection) => `${injection.name}=${injection.hash}`).join(', ') || '(none)';
  const lines = [`config: ${sourceDescription}`];
  if (report.revisions) {
    for (const revision of report.revisions) {
      const tags = revision.tags.length === 0 ? '' : ` (tag${revision.tags.length === 1 ? '' : 's'} ${revision.tags.join(', ')}${revision.default ? '; the default' : ''})`;
      lines.push(`revision ${revision.name}${tags}: ${hashes(revision.injections)}; ${revision.running} pods run it, ${revision.chosen} should`);
    }
    for (const removed of report.removedRevisions ?? []) lines.push(`revision ${removed.revision}: no longer served, still recorded by ${removed.pods.length} pod${removed.pods.length === 1 ? '' : 's'}: ${removed.pods.join(', ')}`);
  } else lines.push(`injections: ${hashes(report.injections)}`);
  lines.push('');
  if (report.workloads.length === 0) {
    lines.push('no pod has or owes an injection');
  } else {
    const revisions = report.revisions !== undefined;
    const rows = [['NAMESPACE', 'WORKLOAD', ...(revisions ? ['REVISION'] : []), 'PODS', 'UP-TO-DATE', 'OUTDATED', 'MISSING', 'NOT-CONFIGURED', 'UNKNOWN']];
    for (const workload of report.workloads) {
      rows.push([
        workload.namespace,
        `${workload.kind}/${workload.name}`,
        ...(revisions ? [revisionCell(workload)] : []),
        String(workload.pods),
        String(workload.upToDate),
        String(workload.outdated),
        String(workload.missing),
        String(workload.noLongerConfigured),
        String(workload.versionUnknown),
      ]);
    }
    lines.push(...table(rows));
    const stale = report.workloads.filter((workload) => workload.findings.length > 0 || workload.ignoredOverrides.length > 0 || (workload.revisionFindings ?? []).length > 0);
    if (stale.length > 0) lines.push('');
    for (const workload of stale) {
      const note = workload.restartable || workload.findings.length === 0 ? '' : ` (${workload.kind === 'Pod' ? 'a bare pod' : `a ${workload.kind}`}: rollout does not restart it)`;
      lines.push(`${workload.namespace} ${workload.kind}/${workload.name}${note}:`);
      for (const finding of workload.revisionFindings ?? []) lines.push(`  ${finding.pods.length} pod${finding.pods.length === 1 ? '' : 's'}: ${finding.message}`);
      for (const finding of workload.findings) lines.push(`  ${describeFinding(finding)}`);
      for (const ignored of workload.ignoredOverrides) lines.push(`  override ignored in ${ignored.pods.length} pod${ignored.pods.length === 1 ? '' : 's'}: ${ignored.message}`);
    }
  }
  const s = report.summary;
  lines.push(
    '',
    `${s.pods} pods: ${s.upToDate} up to date, ${s.outdated} outdated, ${s.missing} missing an injection, ${s.noLongerConfigured} with one no longer configured, ${s.versionUnknown} version unknown, ${s.podsWithoutInjections} without injections` +
      (report.revisions ? `, ${s.unservedRevision ?? 0} labelled with a revision not served` : '') +
      (s.audit !== undefined ? `, ${s.audit} an injection in audit mode would have changed` : ''),
  );
  return lines.join('\n') + '\n';
}
