/**
 * Serverless plugin: stages the tool layers of serverless.yml — `renderers`
 * (`bin/kustomize`, `bin/helm`, for fetch) and `decryption` (`bin/sops`, for
 * apply) — built from the pinned wrapper Go modules (infra/renderers/build.sh,
 * cached outside the checkout) for Linux on the functions' architecture.
 * Lambda unpacks a layer under /opt, so the functions find them at
 * /opt/bin/<tool>.
 *
 * It runs only where a package is made (`serverless package`, `deploy`),
 * before the layer is zipped. `serverless offline` packages nothing and runs
 * no layers, so its runs never wait for a cross build.
 */
import { execFile } from 'node:child_process';
import { chmod, copyFile, mkdir, rename } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import process from 'node:process';
import { fileURLToPath, URL } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);

const BUILD_SCRIPT = fileURLToPath(new URL('../renderers/build.sh', import.meta.url));
/** Each layer and the tools it carries: a function gets only the tools it runs. */
const LAYERS = { renderers: ['kustomize', 'helm'], decryption: ['sops'] };

export default class RenderersLayerPlugin {
  constructor(serverless, _options, { log }) {
    this.serverless = serverless;
    this.log = log;
    this.hooks = {
      'before:package:createDeploymentArtifacts': () => this.stage(),
      'before:package:compileLayers': () => this.allowPackagingWithoutCredentials(),
    };
  }

  /**
   * osls compares every layer with the deployed stack's (CloudFormation
   * DescribeStacks) to reuse an upload whose hash has not changed, even for
   * `serverless package`, which then fails without AWS credentials
   * (serverless/serverless#8187). Packaging must work offline: without
   * credentials there is no deployed layer to reuse, so the new zip is used.
   */
  allowPackagingWithoutCredentials() {
    const compiler = this.serverless.pluginManager.plugins.find(
      (plugin) => typeof plugin.compareWithLastLayer === 'function',
    );
    if (!compiler) {
      throw new Error(
        'osls has no compareWithLastLayer any more: revisit infra/serverless/renderers-layer.js',
      );
    }
    const compare = compiler.compareWithLastLayer.bind(compiler);
    compiler.compareWithLastLayer = async (layerName) => {
      try {
        return await compare(layerName);
      } catch (error) {
        if (error?.code !== 'AWS_CREDENTIALS_NOT_FOUND') throw error;
        this.log.info(`No AWS credentials: layer ${layerName} not compared with a deployed one`);
      }
    };
  }

  async stage() {
    const service = this.serverless.service;
    const goarch = service.provider.architecture === 'arm64' ? 'arm64' : 'amd64';
    const target = `linux/${goarch}`;
    const tools = Object.values(LAYERS).flat();
    this.log.notice(`Building ${tools.join(', ')} for ${target} (cached after the first build)`);
    const { stdout } = await run('bash', [BUILD_SCRIPT, '--target', target, ...tools], {
      maxBuffer: 1024 * 1024,
    }).catch((error) => {
      throw new Error(
        `${BUILD_SCRIPT} --target ${target} failed:\n${error.stderr ?? error.message}`,
      );
    });
    const built = new Map(
      stdout
        .trim()
        .split('\n')
        .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
    );
    for (const [layerName, names] of Object.entries(LAYERS)) {
      const layerDir = resolve(this.serverless.serviceDir, service.getLayer(layerName).path);
      const bin = join(layerDir, 'bin');
      await mkdir(bin, { recursive: true });
      for (const name of names) {
        const from = built.get(name);
        if (!from) throw new Error(`${BUILD_SCRIPT} printed no path for ${name}`);
        // Copy beside the layer, then rename into it: a concurrent packaging run
        // never zips half a binary or a stray copy.
        const staging = `${layerDir}.${name}.${process.pid}`;
        await copyFile(from, staging);
        await chmod(staging, 0o755);
        await rename(staging, join(bin, name));
      }
      this.log.verbose(`Staged ${names.join(', ')} in ${bin}`);
    }
  }
}
