// TypeScript enums: numeric (auto-increment, reverse mapping), string, const-like usage, computed members
enum Direction { Up, Down, Left = 10, Right }
enum Color { Red = "RED", Green = "GREEN", Blue = "BLUE" }
enum Flags { None = 0, Read = 1 << 0, Write = 1 << 1, Exec = 1 << 2, All = Read | Write | Exec }
enum Mixed { A = 1, B = A * 3, C = "c".length }

function move(d: Direction): string {
  switch (d) {
    case Direction.Up: return "north";
    case Direction.Down: return "south";
    default: return Direction[d].toLowerCase();
  }
}

function hasFlag(value: Flags, flag: Flags): boolean {
  return (value & flag) === flag;
}

const perms: Flags = Flags.Read | Flags.Exec;

const palette: Record<Color, number> = { [Color.Red]: 1, [Color.Green]: 2, [Color.Blue]: 3 };

export default {
  numeric: [Direction.Up, Direction.Down, Direction.Left, Direction.Right],
  reverse: [Direction[0], Direction[11]],
  numericKeys: Object.keys(Direction),
  string: [Color.Red, Color.Blue],
  stringKeys: Object.keys(Color),
  stringNoReverse: (Color as any)["RED"] === undefined,
  moves: [move(Direction.Up), move(Direction.Left), move(Direction.Right)],
  flags: [Flags.All, hasFlag(perms, Flags.Read), hasFlag(perms, Flags.Write), hasFlag(Flags.All, Flags.Write | Flags.Exec)],
  mixed: [Mixed.A, Mixed.B, Mixed.C],
  palette,
  enumValuesOnly: Object.values(Direction).filter((v): v is number => typeof v === "number"),
};
