/** This package's version; the default webhook image tag. A test keeps it equal to package.json's. */
export const PACKAGE_VERSION = '0.1.0';
