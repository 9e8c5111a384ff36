import json
from loop_rig import LoopRig, spec_body
async def test_dbg(cluster, api, example):
    rig = LoopRig(cluster, api)
    await rig.create(spec_body(example))
    for _ in range(3):
        await rig.tick()
    rig.source.latency_ms = 450.0
    await rig.tick()
    rig.source.latency_ms = 60.0
    for i in range(40):
        try:
            await rig.tick()
        except Exception as e:
            print("EXC", e)
            print(json.dumps(json.loads(rig.status()["engine"])["learned"]["models"], indent=None)[:2000])
            raise
        eng = json.loads(rig.status()["engine"])
        print(i, rig.phase(), rig.weights(), rig.replicas(), {p: {k: (round(v,4) if isinstance(v,float) else v) for k,v in m.items() if k in ("x","health","samples","residVar","n")} for p,m in eng["learned"]["models"].items()})
