/**
 * `npm run build` (and so `npm ci`, through `prepare`): the bundled CLI
 * (dist/cli/) and the dashboard's web UI (dist/web/).
 */
import { buildCli } from './build-cli.ts';
import { buildWeb } from './build-web.ts';

await Promise.all([buildCli(), buildWeb()]);
