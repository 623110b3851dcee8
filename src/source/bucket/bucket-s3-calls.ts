/**
 * The three S3 exports the bucket source uses, imported by name. The bucket
 * source loads this module on first use: behind a dynamic `import()` of the
 * SDK package itself, esbuild's one-file Lambda bundle keeps everything the
 * package's index re-exports (every command and its schema), while a module
 * that names what it takes lets the rest be dropped.
 */
export { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
