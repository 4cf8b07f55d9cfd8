// BENCHMARKS.md is written by two commands: `npm run bench` writes the file, `npm run bench:cluster`
// one section of it between markers. Each keeps what the other wrote.

export const CLUSTER_SECTION_START = '<!-- npm run bench:cluster: start (this section is rewritten by test/bench/cluster-bench.ts; npm run bench keeps it) -->';
export const CLUSTER_SECTION_END = '<!-- npm run bench:cluster: end -->';

/** The cluster section of `text`, markers included, or undefined when there is none. */
export function clusterSection(text: string): string | undefined {
  const start = text.indexOf(CLUSTER_SECTION_START);
  const end = text.indexOf(CLUSTER_SECTION_END, start);
  if (start === -1 || end === -1) return undefined;
  return text.slice(start, end + CLUSTER_SECTION_END.length);
}

/** `text` with its cluster section replaced by `section` (markers added), or with it appended when there is none. */
export function withClusterSection(text: string, section: string): string {
  const marked = `${CLUSTER_SECTION_START}\n${section.trim()}\n${CLUSTER_SECTION_END}`;
  const old = clusterSection(text);
  if (old !== undefined) return text.replace(old, () => marked);
  return `${text.trimEnd()}\n\n${marked}\n`;
}

/** A freshly written BENCHMARKS.md (`fresh`) with the cluster section `previous` had, if it had one. */
export function keepClusterSection(fresh: string, previous: string | undefined): string {
  const section = previous === undefined ? undefined : clusterSection(previous);
  return section === undefined ? fresh : `${fresh.trimEnd()}\n\n${section}\n`;
}
