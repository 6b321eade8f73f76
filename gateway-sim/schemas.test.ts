import { expect, it } from 'vitest';
import { openApiDocument } from './schemas.ts';

it('an OpenAPI response whose media type has a schema and no example is accepted (examples are optional)', () => {
  const document = {
    openapi: '3.0.3',
    paths: {
      '/managetask': {
        post: {
          operationId: 'ManageTask',
          responses: { '200': { content: { 'application/json': { schema: { type: 'object' } } } } },
        },
      },
    },
  };
  const parsed = openApiDocument.parse(document);
  expect(parsed.paths['/managetask']?.post?.responses['200']?.content?.['application/json']?.example).toBe(
    undefined,
  );
});
