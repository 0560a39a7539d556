// Validation rules added to graphql-js's specifiedRules: introspection off, and a depth limit.

import { GraphQLError, Kind, type ASTVisitor, type SelectionSetNode, type ValidationContext, type ValidationRule } from 'graphql';

/** Rejects `__schema` and `__type` (not `__typename`) when the API does not enable introspection. */
export const NoIntrospectionRule: ValidationRule = (context: ValidationContext): ASTVisitor => ({
  Field(node) {
    const name = node.name.value;
    if (name === '__schema' || name === '__type') {
      context.reportError(new GraphQLError(`Introspection is disabled for this API: the query selects "${name}".`, { nodes: node }));
      return false; // nothing below needs reporting again
    }
    return undefined;
  },
});

/**
 * Depth of a selection: `{ a }` is 1, `{ a { b } }` is 2. Fragments count where they are spread (inline
 * fragments and spreads add no level). Fields starting with `__` (introspection, `__typename`) do not
 * count: they cost no backend call. A fragment's depth is computed once per document; a fragment cycle
 * (reported by graphql-js's NoFragmentCyclesRule) counts as 0 at the point it closes, so this never loops.
 */
export function operationDepth(
  selectionSet: SelectionSetNode,
  context: Pick<ValidationContext, 'getFragment'>,
  memo = new Map<string, number>(),
): number {
  const inProgress = new Set<string>();
  const depthOf = (set: SelectionSetNode | undefined): number => {
    if (set === undefined) return 0;
    let max = 0;
    for (const s of set.selections) {
      let d = 0;
      if (s.kind === Kind.FIELD) {
        d = s.name.value.startsWith('__') ? 0 : 1 + depthOf(s.selectionSet);
      } else if (s.kind === Kind.INLINE_FRAGMENT) {
        d = depthOf(s.selectionSet);
      } else {
        const name = s.name.value;
        const known = memo.get(name);
        if (known !== undefined) d = known;
        else if (!inProgress.has(name)) {
          const fragment = context.getFragment(name);
          if (fragment !== undefined && fragment !== null) {
            inProgress.add(name);
            d = depthOf(fragment.selectionSet);
            inProgress.delete(name);
            memo.set(name, d);
          }
        }
      }
      if (d > max) max = d;
    }
    return max;
  };
  return depthOf(selectionSet);
}

export function maxDepthRule(maxDepth: number): ValidationRule {
  return (context: ValidationContext): ASTVisitor => {
    const memo = new Map<string, number>();
    return {
      OperationDefinition(node) {
        const depth = operationDepth(node.selectionSet, context, memo);
        if (depth > maxDepth) {
          const name = node.name !== undefined ? `Operation "${node.name.value}"` : 'The operation';
          context.reportError(
            new GraphQLError(`${name} has depth ${depth}, which exceeds the maximum depth of ${maxDepth} allowed by this API.`, {
              nodes: node,
            }),
          );
        }
        return false; // fragments are reached through getFragment
      },
    };
  };
}
