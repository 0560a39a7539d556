// Validation rules added to graphql-js's specifiedRules: introspection off, and a depth limit; and the
// size limits (aliases, fields) the engine checks before any other validation (queryLimitsRule).

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

/** Defaults of the size limits (EngineOptions.maxAliases, .maxFields); 0 disables a limit. */
export const DEFAULT_MAX_ALIASES = 50;
export const DEFAULT_MAX_FIELDS = 1000;

export interface QuerySize {
  /** field selections, as executed: a fragment counts once per spread (`__typename` included) */
  fields: number;
  /** aliased field selections, counted the same way */
  aliases: number;
}

/**
 * Size of a selection, fragments expanded where they are spread, each fragment's own size computed once per
 * document (so a document that would expand exponentially costs a linear walk). A fragment cycle counts as
 * nothing where it closes, and an unknown fragment as nothing (other rules report both).
 */
export function operationSize(
  selectionSet: SelectionSetNode,
  context: Pick<ValidationContext, 'getFragment'>,
  memo = new Map<string, QuerySize>(),
): QuerySize {
  const inProgress = new Set<string>();
  const sizeOf = (set: SelectionSetNode | undefined): QuerySize => {
    const total = { fields: 0, aliases: 0 };
    if (set === undefined) return total;
    for (const s of set.selections) {
      let part: QuerySize | undefined;
      if (s.kind === Kind.FIELD) {
        const below = sizeOf(s.selectionSet);
        part = { fields: 1 + below.fields, aliases: (s.alias !== undefined ? 1 : 0) + below.aliases };
      } else if (s.kind === Kind.INLINE_FRAGMENT) {
        part = sizeOf(s.selectionSet);
      } else {
        const name = s.name.value;
        part = memo.get(name);
        if (part === undefined && !inProgress.has(name)) {
          const fragment = context.getFragment(name);
          if (fragment !== undefined && fragment !== null) {
            inProgress.add(name);
            part = sizeOf(fragment.selectionSet);
            inProgress.delete(name);
            memo.set(name, part);
          }
        }
      }
      if (part !== undefined) {
        total.fields += part.fields;
        total.aliases += part.aliases;
      }
    }
    return total;
  };
  return sizeOf(selectionSet);
}

/** Refuses operations with more aliases or field selections than allowed (0 = no limit). */
export function queryLimitsRule(limits: { maxAliases: number; maxFields: number }): ValidationRule {
  return (context: ValidationContext): ASTVisitor => {
    const memo = new Map<string, QuerySize>();
    return {
      OperationDefinition(node) {
        const size = operationSize(node.selectionSet, context, memo);
        const name = node.name !== undefined ? `Operation "${node.name.value}"` : 'The operation';
        if (limits.maxAliases > 0 && size.aliases > limits.maxAliases) {
          context.reportError(
            new GraphQLError(
              `${name} uses ${size.aliases} aliases, which exceeds the maximum of ${limits.maxAliases} allowed by this API.`,
              { nodes: node },
            ),
          );
        }
        if (limits.maxFields > 0 && size.fields > limits.maxFields) {
          context.reportError(
            new GraphQLError(
              `${name} selects ${size.fields} fields (fragments counted where spread), which exceeds the maximum of ` +
                `${limits.maxFields} allowed by this API.`,
              { nodes: node },
            ),
          );
        }
        return false; // fragments are reached through getFragment
      },
    };
  };
}
