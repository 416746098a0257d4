"""Vision transformer pieces: patch embedding with shape checks, interpolated position embeddings, output dataclass."""
import math
from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ViTOutput:
    last_hidden_state: torch.Tensor
    pooler_output: torch.Tensor
    attentions: Optional[torch.Tensor] = None


class PatchEmbed(nn.Module):
    def __init__(self, img_size=16, patch_size=4, in_chans=3, embed_dim=16, strict_img_size=True):
        super().__init__()
        self.patch_size = patch_size
        self.img_size = img_size
        self.strict_img_size = strict_img_size
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        B, C, H, W = x.shape
        if self.strict_img_size:
            assert H == self.img_size and W == self.img_size, f"Input size ({H}x{W}) doesn't match {self.img_size}"
        elif H % self.patch_size or W % self.patch_size:
            pad_h = (self.patch_size - H % self.patch_size) % self.patch_size
            pad_w = (self.patch_size - W % self.patch_size) % self.patch_size
            x = F.pad(x, (0, pad_w, 0, pad_h))
        return self.proj(x).flatten(2).transpose(1, 2)


class TinyViT(nn.Module):
    def __init__(self, img_size=16, patch=4, dim=16, depth=2, heads=2):
        super().__init__()
        self.patch_embed = PatchEmbed(img_size, patch, 3, dim, strict_img_size=False)
        num_patches = (img_size // patch) ** 2
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.randn(1, num_patches + 1, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, heads, dim * 2, dropout=0.0, batch_first=True)
        self.blocks = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)

    def interpolate_pos_encoding(self, embeddings, height, width):
        num_patches = embeddings.shape[1] - 1
        num_positions = self.pos_embed.shape[1] - 1
        if num_patches == num_positions and height == width:
            return self.pos_embed
        class_pos = self.pos_embed[:, :1]
        patch_pos = self.pos_embed[:, 1:]
        dim = embeddings.shape[-1]
        side = int(math.sqrt(num_positions))
        new_h = height // self.patch_embed.patch_size
        new_w = width // self.patch_embed.patch_size
        patch_pos = patch_pos.reshape(1, side, side, dim).permute(0, 3, 1, 2)
        patch_pos = F.interpolate(patch_pos, size=(new_h, new_w), mode="bicubic", align_corners=False)
        patch_pos = patch_pos.permute(0, 2, 3, 1).view(1, -1, dim)
        return torch.cat((class_pos, patch_pos), dim=1)

    def forward(self, pixel_values) -> ViTOutput:
        _, _, h, w = pixel_values.shape
        x = self.patch_embed(pixel_values)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1)
        x = x + self.interpolate_pos_encoding(x, h, w)
        x = self.norm(self.blocks(x))
        return ViTOutput(last_hidden_state=x, pooler_output=x[:, 0])


def make_inputs_patch():
    return [((), (torch.randn(2, 3, 16, 16),)) for _ in range(2)]


def make_inputs_vit():
    return [((), (torch.randn(2, 3, 16, 16),)) for _ in range(2)]


EXAMPLES = {"PatchEmbed": make_inputs_patch, "TinyViT": make_inputs_vit}
