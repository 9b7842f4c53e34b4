// Function and class names as people read them: JVM type descriptors in
// Java's own notation, and long names shortened from the front, where the
// package is, so that the class and method stay visible.

const primitives = { B: 'byte', C: 'char', D: 'double', F: 'float', I: 'int', J: 'long', S: 'short', Z: 'boolean', V: 'void' };

// descriptorType reads one JVM field descriptor at s[i] ("[B", "I",
// "Ljava/lang/String;") and returns [Java type, index after it], or null.
function descriptorType(s, i) {
  let dims = 0;
  while (s[i] === '[') {
    dims++;
    i++;
  }
  let base;
  if (s[i] === 'L') {
    const end = s.indexOf(';', i);
    if (end < 0) return null;
    base = s.slice(i + 1, end).replace(/\//g, '.');
    i = end + 1;
  } else if (primitives[s[i]]) {
    base = primitives[s[i]];
    i++;
  } else {
    return null;
  }
  return [base + '[]'.repeat(dims), i];
}

// scalaOps are the characters Scala encodes in JVM method names.
const scalaOps = {
  tilde: '~', eq: '=', less: '<', greater: '>', bang: '!', hash: '#', percent: '%', up: '^', amp: '&',
  bar: '|', times: '*', div: '/', plus: '+', minus: '-', colon: ':', bslash: '\\', qmark: '?', at: '@',
};
const scalaOp = new RegExp(`^(\\$(${Object.keys(scalaOps).join('|')}))+$`);

// scalaMethod decodes a method name that Scala made of an operator:
// "$colon$plus" is List's ":+".
function scalaMethod(name) {
  const dot = name.lastIndexOf('.');
  const method = name.slice(dot + 1);
  if (!method.startsWith('$') || !scalaOp.test(method)) return name;
  return name.slice(0, dot + 1) + method.split('$').slice(1).map((k) => scalaOps[k]).join('');
}

// readableName writes a JVM class or method name as Java and Scala do: an
// array class "[B" as "byte[]", "[Ljava.lang.Object;" as
// "java.lang.Object[]", a method's descriptor "(I[B)V" as "(int, byte[])",
// and a Scala operator "SeqLike.$colon$plus" as "SeqLike.:+". Other names
// are returned as they are.
export function readableName(name) {
  if (!name) return name;
  if (name[0] === '[') {
    // async-profiler and JFR write array classes with dots: [Ljava.lang.Object;
    const t = descriptorType(name.replace(/\./g, '/'), 0);
    if (t && t[1] === name.length) return t[0];
    return name;
  }
  const open = name.indexOf('(');
  if (open > 0 && !name.endsWith(')')) {
    const close = name.indexOf(')', open);
    if (close > 0) {
      const params = [];
      let i = open + 1;
      while (i < close) {
        const t = descriptorType(name, i);
        if (!t) return name;
        params.push(t[0]);
        i = t[1];
      }
      // The return type follows; a frame's name does not need it.
      if (!descriptorType(name, close + 1)) return name;
      return `${scalaMethod(name.slice(0, open))}(${params.join(', ')})`;
    }
  }
  return scalaMethod(name);
}

// readableText writes the JVM names in a sentence (a finding's message)
// as readableName does: "in scala.collection.SeqLike$class.$colon$plus"
// reads "in scala.collection.SeqLike$class.:+", as the flame graph names it.
export function readableText(text) {
  if (!text) return text;
  return text.replace(/[A-Za-z_$][\w$]*(?:\.[\w$]+)+/g, (name) => (name.includes('$') ? readableName(name) : name));
}

// shortenFront cuts name to at most n characters by dropping its front,
// marked with "…": "…netty.channel.nio.NioEventLoop.run". Where it can,
// it cuts at a dot, so that a package is dropped whole.
export function shortenFront(name, n) {
  if (name.length <= n) return name;
  if (n <= 1) return n === 1 ? '…' : '';
  const tail = name.slice(name.length - (n - 1));
  const dot = tail.indexOf('.');
  // Dropping the rest of a cut package reads better, unless that leaves
  // too little of the name.
  if (dot > 0 && dot < tail.length / 3) return `…${tail.slice(dot + 1)}`;
  return `…${tail}`;
}
