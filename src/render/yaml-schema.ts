import { CORE_SCHEMA, defineScalarTag, intCoreTag, mergeTag } from 'js-yaml';

const LEGACY_OCTAL = /^[-+]?0[0-7]+$/;

// kubectl (go-yaml v2) and Flux (go-yaml v3) both read `0644` as octal 420;
// the YAML 1.2 core schema reads it as decimal 644, which would silently turn
// `defaultMode: 0440` into mode 0670. Match the Kubernetes tools.
const kubernetesIntTag = defineScalarTag<number>('tag:yaml.org,2002:int', {
  implicit: true,
  implicitFirstChars: intCoreTag.implicitFirstChars,
  resolve: (source, isExplicit, tagName) =>
    LEGACY_OCTAL.test(source)
      ? Number.parseInt(source, 8)
      : intCoreTag.resolve(source, isExplicit, tagName),
  identify: intCoreTag.identify,
  represent: intCoreTag.represent,
});

/**
 * The only schema manifests are read with: YAML 1.2 core (strings, numbers,
 * booleans, null, sequences, mappings) plus merge keys (`<<`), which kubectl
 * and Flux accept, and legacy octal integers. No other tag resolves, so
 * `!!js/function`, `!!binary`, `!!timestamp` or `!custom` fail to parse.
 */
export const MANIFEST_SCHEMA = CORE_SCHEMA.withTags(kubernetesIntTag, mergeTag);
