import t from 'tap'
import { WorkMarks } from '../../actors/kit/work-marks.js'
import { partitionOf } from '../../protocol/subjects.js'

/** Ids of one partition, so one taking covers them all. */
const ids = (() => {
  const out: string[] = []
  for (let i = 0; out.length < 4; i++) if (partitionOf(`sesn_${i}`) === partitionOf('sesn_0')) out.push(`sesn_${i}`)
  return out
})()
const p = partitionOf(ids[0]!)

t.test('unknown until the partition is taken and listed, then what the owner wrote itself', async (t) => {
  const marks = new WorkMarks()
  t.equal(marks.has(ids[0]!), undefined, 'not owned: ask the store')
  const taking = marks.begin(p)
  t.equal(marks.has(ids[0]!), undefined, 'listing in flight: ask the store')
  marks.listed(p, taking, [ids[0]!])
  t.equal(marks.has(ids[0]!), true, 'listed with a marker')
  t.equal(marks.has(ids[1]!), false, 'listed without one')
  marks.mark(ids[1]!)
  marks.unmark(ids[0]!)
  t.same([marks.has(ids[0]!), marks.has(ids[1]!)], [false, true], 'then kept by the owner')
  marks.drop(p)
  t.equal(marks.has(ids[1]!), undefined, 'given away: unknown again')
})

t.test('a marker changed while the listing is in flight is not lost to it', async (t) => {
  const marks = new WorkMarks()
  const taking = marks.begin(p)
  marks.mark(ids[0]!) // set after the listing read the bucket: the listing misses it
  marks.mark(ids[1]!)
  marks.unmark(ids[1]!) // cleared after the listing read it: the listing still names it
  marks.listed(p, taking, [ids[1]!, ids[2]!])
  t.same(
    ids.slice(0, 3).map((id) => marks.has(id)),
    [true, false, true],
  )
})

t.test('a listing made for an earlier taking of the partition is ignored', async (t) => {
  const marks = new WorkMarks()
  const first = marks.begin(p)
  marks.drop(p)
  const second = marks.begin(p)
  marks.listed(p, first, [ids[0]!])
  t.equal(marks.has(ids[0]!), undefined, 'the stale listing settles nothing')
  marks.listed(p, second, [])
  t.equal(marks.has(ids[0]!), false)
})
