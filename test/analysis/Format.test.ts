import assert from "node:assert/strict"
import { describe, it } from "node:test"
import { tableFromArrays } from "apache-arrow"
import { toCsv, toText } from "../../src/analysis/Format.ts"

const column = (text: string, name: string): Array<string> => {
  const lines = text.split("\n")
  const header = lines[0]!
  const end = header.indexOf(name) + name.length
  return lines.slice(1).map((l) => l.slice(0, end).trim().split(/\s{2,}/).at(-1)!)
}

describe("Format", () => {
  it("prints floats for people: 4 significant digits at the column's largest value, whole numbers as integers", () => {
    const t = tableFromArrays({
      "Bytes In": Float64Array.from([782719936, 1024, 0]),
      "Time Interval": Float64Array.from([0, 1, 2]),
      "Duration (s)": Float64Array.from([0.5755, 0.0000064373, 0.02]),
      "Share (%)": Float64Array.from([93.0166, 4.1, Number.NaN])
    })
    const text = toText(t)
    assert.deepEqual(column(text, "Bytes In"), ["782,719,936", "1,024", "0"])
    assert.deepEqual(column(text, "Time Interval"), ["0", "1", "2"])
    assert.deepEqual(column(text, "Duration (s)"), ["0.5755", "6.44e-6", "0.0200"])
    assert.deepEqual(column(text, "Share (%)"), ["93.02", "4.10", "-"])
  })

  it("keeps every digit in CSV", () => {
    const t = tableFromArrays({ x: Float64Array.from([782719936, 0.0000064373]) })
    assert.equal(toCsv(t), "x\n782719936\n0.0000064373\n")
  })
})
