// The route action graphql owns: a route served by a GraphQL API.
import { ResourceRefSchema } from '../../../api/primitives.js';

export const graphqlRouteActions = {
  graphqlApiRef: ResourceRefSchema.optional(),
  // Gloo 1.10's name for graphqlApiRef
  graphqlSchemaRef: ResourceRefSchema.optional(),
};
