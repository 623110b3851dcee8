/**
 * The file names kustomize accepts for a kustomization, in its order of
 * preference. A module of its own: plain-manifest parsing skips these files
 * and should not load the kustomize runner to know their names.
 */
export const KUSTOMIZATION_FILES = ['kustomization.yaml', 'kustomization.yml', 'Kustomization'];
