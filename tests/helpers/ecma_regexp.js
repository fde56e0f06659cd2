// The reference answers for tests/interface/test_ecma_patterns.py: JavaScript's own RegExp.
// stdin: a JSON array of [pattern, string] pairs; stdout: a JSON array with, for each pair,
// true/false (new RegExp(pattern, "u").test(string), as JSON Schema 2020-12 recommends)
// or "syntax_error" when the pattern is not a valid u-mode ECMA-262 pattern.
"use strict";
const chunks = [];
process.stdin.on("data", (chunk) => chunks.push(chunk));
process.stdin.on("end", () => {
  const cases = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  const answers = cases.map(([pattern, string]) => {
    let re;
    try {
      re = new RegExp(pattern, "u");
    } catch (e) {
      return "syntax_error";
    }
    return re.test(string);
  });
  process.stdout.write(JSON.stringify(answers));
});
