"""An independent generator of hot192-shaped twins: 3 racks x 8 servers x 8 A100, 100 Gbit/s
server links, 50 Gbit/s uplinks to two spines; 40% hot servers picked by Python's random (not
numpy), hot laws (1, 1.5, 3) with probabilities jittered around (0.65, 0.28, 0.07), cool (1, 1.2)."""
import json, random, sys
seed = int(sys.argv[1]); rng = random.Random(seed)
nodes, edges = [], []
for sp in ("spine0", "spine1"):
    nodes.append({"id": sp, "kind": "switch"})
ids = [f"r{r}n{k}" for r in range(3) for k in range(8)]
hot = set(rng.sample(ids, round(0.4 * len(ids))))
for r in range(3):
    nodes.append({"id": f"leaf{r}", "kind": "switch"})
    for sp in ("spine0", "spine1"):
        edges.append({"source": f"leaf{r}", "target": sp, "bandwidth_gbps": 50.0})
    for k in range(8):
        sid = f"r{r}n{k}"
        if sid in hot:
            p3 = rng.uniform(0.03, 0.1); p2 = rng.uniform(0.2, 0.4)
            law = {"values": [1.0, 1.5, 3.0], "probs": [1 - round(p2, 4) - round(p3, 4), round(p2, 4), round(p3, 4)]}
        else:
            p = rng.uniform(0.002, 0.03)
            law = {"values": [1.0, 1.2], "probs": [1 - round(p, 4), round(p, 4)]}
        nodes.append({"id": sid, "kind": "server", "gpus": 8, "gpu_type": "A100", "intra_bandwidth_gbps": 2400.0, "slowdown": law})
        edges.append({"source": sid, "target": f"leaf{r}", "bandwidth_gbps": 100.0})
json.dump({"format": "placement-instance/1", "name": f"hot192-twin{seed}", "source": f"independent twin generator, seed {seed}",
           "topology": {"nodes": nodes, "edges": edges}, "jobs": []}, open(sys.argv[2] if len(sys.argv) > 2 else f"twin{seed}.json", "w"))
