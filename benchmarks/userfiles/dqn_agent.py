"""Double DQN with a dueling head, epsilon-greedy exploration and a uniform replay buffer, on a tiny
point-mass environment. The agent's ``act`` and ``learn`` are compiled.
"""
import math
import random

import torch
import torch.nn as nn
import torch.nn.functional as F


class PointMass:
    """Move a point on a line towards the origin: actions left / stay / right."""

    def __init__(self, seed=0):
        self.rng = random.Random(seed)

    def reset(self):
        self.pos, self.t = self.rng.uniform(-2, 2), 0
        return torch.tensor([self.pos, 0.0, 1.0])

    def step(self, action):
        self.pos += (action - 1) * 0.25 + self.rng.gauss(0, 0.02)
        self.t += 1
        reward = -abs(self.pos)
        done = abs(self.pos) < 0.1 or self.t >= 20
        return torch.tensor([self.pos, self.t / 20, 1.0]), reward, done


class DuelingQ(nn.Module):
    def __init__(self, obs_dim, n_actions, hidden=32):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs_dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.value = nn.Linear(hidden, 1)
        self.adv = nn.Linear(hidden, n_actions)

    def forward(self, obs):
        h = self.body(obs)
        adv = self.adv(h)
        return self.value(h) + adv - adv.mean(-1, keepdim=True)


class ReplayBuffer:
    def __init__(self, capacity, obs_dim):
        self.obs = torch.zeros(capacity, obs_dim)
        self.next_obs = torch.zeros(capacity, obs_dim)
        self.act = torch.zeros(capacity, dtype=torch.long)
        self.rew = torch.zeros(capacity)
        self.done = torch.zeros(capacity, dtype=torch.bool)
        self.capacity, self.ptr, self.size = capacity, 0, 0

    def add(self, o, a, r, o2, d):
        i = self.ptr
        self.obs[i], self.act[i], self.rew[i], self.next_obs[i], self.done[i] = o, a, r, o2, d
        self.ptr = (self.ptr + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def sample(self, batch_size):
        idx = torch.randint(0, self.size, (batch_size,))
        return self.obs[idx], self.act[idx], self.rew[idx], self.next_obs[idx], self.done[idx]

    def __len__(self):
        return self.size


class Agent:
    def __init__(self, obs_dim=3, n_actions=3, gamma=0.99, target_update=5,
                 eps_start=1.0, eps_end=0.05, eps_decay=50):
        self.q = DuelingQ(obs_dim, n_actions)
        self.target = DuelingQ(obs_dim, n_actions)
        self.target.load_state_dict(self.q.state_dict())
        self.opt = torch.optim.Adam(self.q.parameters(), lr=1e-3)
        self.n_actions = n_actions
        self.gamma = gamma
        self.target_update = target_update
        self.eps_start, self.eps_end, self.eps_decay = eps_start, eps_end, eps_decay
        self.steps = 0
        self.learn_steps = 0

    def epsilon(self):
        return self.eps_end + (self.eps_start - self.eps_end) * math.exp(-self.steps / self.eps_decay)

    @torch.no_grad()
    def act(self, obs, greedy=False):
        self.steps += 1
        if not greedy and random.random() < self.epsilon():
            return random.randrange(self.n_actions)
        return self.q(obs.unsqueeze(0)).argmax(-1).item()

    def learn(self, batch, n_step=1):
        obs, act, rew, next_obs, done = batch
        q = self.q(obs).gather(1, act[:, None]).squeeze(1)
        with torch.no_grad():
            next_a = self.q(next_obs).argmax(1, keepdim=True)
            next_q = self.target(next_obs).gather(1, next_a).squeeze(1)
            target = rew + (self.gamma ** n_step) * (~done).float() * next_q
        td = target - q
        loss = F.smooth_l1_loss(q, target)
        self.opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(self.q.parameters(), 10.0)
        self.opt.step()
        self.learn_steps += 1
        if self.learn_steps % self.target_update == 0:
            self.target.load_state_dict(self.q.state_dict())
        return loss.item(), td.abs().max().item()


def main():
    torch.manual_seed(0)
    random.seed(0)
    env, agent = PointMass(), Agent()
    agent.act = torch.compile(agent.act)
    agent.learn = torch.compile(agent.learn)
    buffer = ReplayBuffer(256, 3)
    obs = env.reset()
    for t in range(60):
        a = agent.act(obs)
        next_obs, r, done = env.step(a)
        buffer.add(obs, a, r, next_obs, done)
        obs = env.reset() if done else next_obs
        if len(buffer) >= 16 and t % 8 == 0:
            batch_size = 16 if len(buffer) < 48 else 32
            loss, td_max = agent.learn(buffer.sample(batch_size))
            print(f"t={t} eps={agent.epsilon():.2f} loss={loss:.4f} td_max={td_max:.3f}")
    obs = env.reset()
    ret = 0.0
    for _ in range(5):
        obs, r, done = env.step(agent.act(obs, greedy=True))
        ret += r
    print("greedy return", round(ret, 3))


if __name__ == "__main__":
    main()
