// Entry point of the bundled server (the container image's entrypoint, and `npm run webhook`).
import { settingsFromEnvironment } from './settings';
import { startWebhookServer } from './webhook-server';

function fatal(message: string, error: unknown): never {
  process.stdout.write(JSON.stringify({ time: new Date().toISOString(), level: 'error', msg: message, error: (error as Error)?.message ?? String(error) }) + '\n');
  process.exit(1);
}

async function main(): Promise<void> {
  const settings = settingsFromEnvironment(process.env);
  const server = await startWebhookServer(settings);
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    server.logger.log('info', 'signal received', { signal });
    void server.shutdown().then(() => {
      server.logger.flush();
      process.exit(0);
    });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('exit', () => server.logger.flush());
  process.on('unhandledRejection', (error) => server.logger.log('error', 'unhandled rejection', { error: (error as Error)?.message ?? String(error) }));
}

main().catch((error) => fatal('webhook failed to start', error));
