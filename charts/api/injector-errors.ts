// Telling the library's errors apart without exporting Error subclasses (jsii cannot carry them), as
// cdk8s' `Errors.isValidationError` does. TypeScript callers who want the issues themselves import
// `SidecarInjectorPropsError` from `cdk8s-sidecar-injector/engine`.

import { CertificateStoreError } from '../certificates/certificate-store';
import { SidecarInjectorPropsError } from '../sidecar-injector-props-error';

/** Checks on what the library throws. */
export class InjectorErrors {
  /**
   * Whether `thrown` is the error of invalid props: its message lists every problem, one per line, as
   * `  <prop path>: <reason>`, under `invalid props of SidecarInjector "<construct path>":`.
   */
  public static isPropsError(thrown: any): boolean {
    return thrown instanceof SidecarInjectorPropsError;
  }

  /** Whether `thrown` is the error of a certificate store that cannot be used (its message says what to do). */
  public static isCertificateStoreError(thrown: any): boolean {
    return thrown instanceof CertificateStoreError;
  }

  private constructor() {}
}
