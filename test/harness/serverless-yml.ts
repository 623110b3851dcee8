/**
 * serverless.yml read as data, for tests and benches that must use what the
 * file declares rather than values typed again. The CloudFormation short
 * forms it uses load as their long forms; any other tag loads as a plain value.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'yaml';
import { REPO_ROOT } from './testbin.ts';

export const SERVERLESS_YML = join(REPO_ROOT, 'serverless.yml');

export type Cfn = { Ref: string } | { 'Fn::GetAtt': string[] } | { 'Fn::Sub': string };

const CFN_TAGS = [
  { tag: '!Ref', resolve: (value: string): Cfn => ({ Ref: value }) },
  { tag: '!GetAtt', resolve: (value: string): Cfn => ({ 'Fn::GetAtt': value.split('.') }) },
  { tag: '!Sub', resolve: (value: string): Cfn => ({ 'Fn::Sub': value }) },
];

/** The parsed file; `T` names the parts the caller reads. */
export async function readServerlessYml<T>(): Promise<T> {
  return parse(await readFile(SERVERLESS_YML, 'utf8'), {
    customTags: CFN_TAGS,
    logLevel: 'error',
  }) as T;
}
