// `npm run bench`'s progress lines on stderr, each with the seconds since the run began.
export const began = performance.now();
export const elapsedSeconds = () => (performance.now() - began) / 1000;
export const progress = (message: string) => process.stderr.write(`[bench ${elapsedSeconds().toFixed(1).padStart(6)} s] ${message}\n`);
