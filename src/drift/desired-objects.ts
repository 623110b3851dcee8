/**
 * The desired objects of a drift check, as drift applies them: plain
 * Kubernetes objects carrying the track's ownership label (the label is part
 * of what we own, so its removal by hand is drift like any other).
 */
import type { KubeObject } from '../cluster/kube-object.ts';
import { TRACK_LABEL } from '../apply/ownership.ts';
import type { RenderedObject } from '../render/types.ts';

/** What drift accepts: a rendered bundle's objects, or plain objects. */
export type DesiredObject = RenderedObject | KubeObject;

function isRendered(object: DesiredObject): object is RenderedObject {
  return 'manifest' in object && typeof object.manifest === 'object' && object.manifest !== null;
}

/** The object as driftless applies it for `track`. */
export function desiredObject(object: DesiredObject, track: string): KubeObject {
  const manifest = (isRendered(object) ? object.manifest : object) as unknown as KubeObject;
  return {
    ...manifest,
    metadata: {
      ...manifest.metadata,
      labels: { ...manifest.metadata.labels, [TRACK_LABEL]: track },
    },
  };
}
