/** A view of views/, compiled by the build (build.ts) into the function that renders it. */
declare module '*.pug' {
  const render: (locals: Record<string, unknown>) => string;
  export default render;
}
