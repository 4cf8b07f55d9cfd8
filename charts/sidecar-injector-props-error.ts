import type { ConfigIssue } from '../webhook/config';

// A file of its own because the certificate sources and the server kinds throw it while the props
// refer to them: with the class in sidecar-injector-props.ts the imports went round in a circle.

/** An error in the props: every problem found, each naming the prop path and the reason, and the
 * path of the construct in the app. */
export class SidecarInjectorPropsError extends Error {
  /**
   * @param issues every problem found, each with its prop path (`injections[1].containers[0].image`)
   * @param constructPath the construct's path in the app (`platform/SidecarInjector`), when known
   */
  constructor(
    readonly issues: readonly ConfigIssue[],
    readonly constructPath?: string,
  ) {
    const subject = constructPath === undefined ? 'SidecarInjector props' : `props of SidecarInjector "${constructPath}"`;
    super(`invalid ${subject}:\n${issues.map((issue) => `  ${issue.path}: ${issue.message}`).join('\n')}`);
    this.name = 'SidecarInjectorPropsError';
  }
}
