/** Which namespaces an engine works in: every namespace, or a list of them. */
export type NamespaceScope = { namespaces: string[] } | 'all';
