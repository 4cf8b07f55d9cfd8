// `npm run bench`'s CPU profile of the webhook under saturation (--cpu-prof), summarized by area and function.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { REPO_ROOT, detectPinning, makeTempDir, startServer, webhookSpec } from './bench-support';
import { ProfileSummary, summarizeProfile } from './cpu-profile';
import { LoadRun, Scenario, loadSegment, mergeSegments } from './https-load-segments';

export const PROFILE_SECONDS = 6;

/** The webhook, started anew with --cpu-prof, under the closed-loop scenario for PROFILE_SECONDS; its profile summarized and kept in the temp directory. */
export async function profileUnderSaturation(
  deployed: Parameters<typeof webhookSpec>[0],
  closedScenario: Scenario,
  bodyFile: string,
  pinning: ReturnType<typeof detectPinning>,
): Promise<{ profile: ProfileSummary | undefined; profiledRun: LoadRun; keptProfile: string | undefined }> {
  const profileDir = makeTempDir('cpu-profile');
  const profiledSpec = await webhookSpec(deployed, ['--cpu-prof', '--cpu-prof-dir', profileDir]);
  // No drain delay, so SIGTERM ends it at once (the profile is written on a clean exit).
  const profiled = await startServer({ ...profiledSpec, env: { ...profiledSpec.env, INJECTOR_SHUTDOWN_DELAY_SECONDS: '0' } }, pinning);
  const profileSegment = await loadSegment(profiled, { ...closedScenario, config: { ...closedScenario.config, warmupSeconds: 2, durationSeconds: PROFILE_SECONDS } }, deployed, bodyFile, pinning);
  const profiledRun = mergeSegments('profile', 'webhook', [profileSegment], pinning.enabled, () => true);
  await profiled.stop();
  const profileFile = fs.readdirSync(profileDir).find((file) => file.endsWith('.cpuprofile'));
  const profile = profileFile ? summarizeProfile(path.join(profileDir, profileFile), REPO_ROOT, 15) : undefined;
  const keptProfile = profileFile ? path.join(os.tmpdir(), `injector-webhook-saturation-${process.pid}.cpuprofile`) : undefined;
  if (profileFile && keptProfile) fs.copyFileSync(path.join(profileDir, profileFile), keptProfile);
  return { profile, profiledRun, keptProfile };
}
