/** `driftless render`: the manifests a revision renders to, as multi-document YAML. */
import { readTrackState } from '../sync/track-state.ts';
import type { CommandHandler } from './command-handler.ts';
import { EXIT_OK } from './exit-codes.ts';
import { loadRevisionBundle, targetRevision } from './load-revision.ts';
import { findTrack } from './select-tracks.ts';
import { formatManifests } from '../render/manifests-yaml.ts';
import { selectObjects } from '../sync/select-objects.ts';

export const renderCommand: CommandHandler = async (ctx, line, output) => {
  const track = findTrack(ctx.config, line.track ?? '', line.config);
  const state = await readTrackState(ctx.state, track.name);
  const target = await targetRevision(track, line.revision, ctx, state.pinned);
  output.log(`# ${track.name} at ${target.revision} (${target.origin})`);
  const bundle = await loadRevisionBundle(track, target, ctx, 'as-stored');
  for (const { file, reason } of bundle.skipped ?? []) output.log(`# skipped ${file}: ${reason}`);
  // What sync applies: the objects the track's filters and rules leave out are named, not printed.
  const catalog = await (await ctx.cluster(track)).discover();
  const { selected, ignored } = selectObjects(track, bundle.objects, catalog);
  for (const [subject, reason] of Object.entries(ignored)) {
    output.log(`# ignored ${subject}: ${reason}`);
  }
  if (selected.length === 0)
    output.log(`# ${track.name}: the revision renders no objects to apply`);
  else output.print(formatManifests({ objects: selected }));
  return EXIT_OK;
};
